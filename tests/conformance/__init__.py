"""A conformance kit: the real `claude` and `codex` CLIs against loopback stand-ins of their
providers' APIs (SPEC A2-A6, A26-A28).

`anthropic_api` and `openai_api` serve the Messages and Responses APIs on 127.0.0.1, answering
each request with one scripted `Reply` (a normal answer, a usage limit, a throttle, a server
error) and recording what the CLI sent. `cases` is the case table: for each case, which CLI and
credential, the reply (built from the real clock, so resets are relative to now) and what
autodev must read from the CLI's output (`Expect`). `kit.run_case` runs one case through
autodev's own shell (`call_participant`) and returns a `Transcript`; `kit.check` lists where
autodev's reading differs from the expectation. `record` writes transcripts to
tests/fixtures/realcli/kit/ so the readings can be checked again without the CLIs installed.
Nothing here ever contacts a host other than 127.0.0.1.
"""
