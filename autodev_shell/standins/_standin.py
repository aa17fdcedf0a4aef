"""A stand-in for a provider CLI (`claude`, `codex`, `agy`): a real subprocess that prints what
the real CLI prints (SPEC C6 demo, tests). Standard library only: it runs under any python3.

Answers come from the JSON script named by `$AUTODEV_STANDIN_SCRIPT`:

    {"claude": [{"kind": "limit"}, {"post": "review done"}],
     "codex": {"answers": [{"kind": "reconnecting"}], "default": {"post": "ok"}},
     "default": {"post": "ok"}}

Per CLI a queue of answers, consumed in order (a lock-protected cursor file, so parallel calls
never take the same answer); then that CLI's `default`, then the top-level `default`, then
`{"post": "ok"}`. An answer has:

- `kind`: a preset in the real CLI's format — `post`, `limit`, `network`, `reconnecting` (codex's
  endless retry, A37), `login` (claude, A32), `unauthenticated` (codex/agy), `crash`, `hang`,
  `flood` (megabytes of chatter, then the post);
- `post`, `notice` (the limit text), `resets_at` (claude's `rate_limit_event`, epoch seconds),
  `resets_in` (the same, as seconds after the call starts: a reset a loaded machine cannot
  overtake before the call),
  `stdout` / `stderr` (raw text replacing the preset's), `stdout_hex` (raw bytes written to
  stdout first, as they are: invalid UTF-8, NUL), `exit`, `sleep` (seconds before
  answering), `interval` (between reconnect lines), `flood_bytes` (chatter before the answer,
  any kind), `grandchild_pidfile` (start a
  grandchild that outlives the CLI unless its process group is killed; its pid goes there).

`$AUTODEV_STANDIN_CLOCK`, when set, names a virtual clock's ledger (the demo's
`clock.VirtualClock`): before answering, the stand-in appends the answer's `duration` (virtual
seconds the call takes, default `DEFAULT_DURATION`) as one line, so the call takes that long on
the clock whatever the machine's speed. `sleep` is real seconds and is not charged.

The prompt is read where the real CLI reads it (agy: `-p <prompt>`; claude and codex: the
positional argument, else stdin). `$AUTODEV_STANDIN_LOG`, when set, gets one JSON line per call
as it starts: the CLI, its argv, the answer, its pid, the prompt and where it came from
(`prompt_from`), and `alive_before`: the pids of earlier calls in that log still running.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
import uuid
from typing import Any

SCRIPT_ENV = "AUTODEV_STANDIN_SCRIPT"
STATE_ENV = "AUTODEV_STANDIN_STATE"
LOG_ENV = "AUTODEV_STANDIN_LOG"
CLOCK_ENV = "AUTODEV_STANDIN_CLOCK"
#: Virtual seconds a call takes on a virtual clock when its answer gives no `duration`.
DEFAULT_DURATION = 60.0
DEFAULT_ANSWER: dict[str, Any] = {"post": "ok"}

NOTICES = {
    # A2 (U+00B7), A3, A4: the formats real CLIs print.
    "claude": "You've hit your limit · resets 2:30pm (Europe/Lisbon)",
    "codex": "You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to "
    "purchase more credits or try again in 3 hours 2 minutes.",
    "agy": "Individual quota reached. Your quota will refresh automatically. "
    "Resets in 2h31m33s.",
}
CODEX_BANNER = (
    "OpenAI Codex v0.171.0\n--------\nworkdir: {cwd}\nmodel: gpt-5\nprovider: openai\n"
    "approval: never\nsandbox: read-only\nsession id: {session}\n--------\nuser\n{prompt}\n"
)


def _load_script() -> dict[str, Any]:
    path = os.environ.get(SCRIPT_ENV)
    if not path:
        return {}
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict):
        raise SystemExit(f"stand-in: {path}: the script must be a JSON object")
    return data


def _take_answer(name: str, script: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The next answer for `name` and where it came from ("0", "1", …, or "default")."""
    entry = script.get(name, [])
    queue = entry.get("answers", []) if isinstance(entry, dict) else entry
    fallback = entry.get("default") if isinstance(entry, dict) else None
    fallback = fallback or script.get("default") or DEFAULT_ANSWER
    script_path = os.environ.get(SCRIPT_ENV, "")
    state = os.environ.get(STATE_ENV) or (script_path + ".cursor" if script_path else "")
    if not state or not queue:
        return dict(fallback), "default"
    with open(state + ".lock", "a+", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(state, encoding="utf-8") as handle:
                cursor = json.load(handle)
        except (OSError, ValueError):
            cursor = {}
        index = int(cursor.get(name, 0))
        cursor[name] = index + 1
        tmp = f"{state}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(cursor, handle)
        os.replace(tmp, state)
    if index < len(queue):
        return dict(queue[index]), str(index)
    return dict(fallback), "default"


#: Options of the real CLIs that take a value (so the value is not the positional prompt), and
#: flags that take none. Anything else that begins with `-` is refused as the real CLIs refuse
#: it (claude 2.1: `error: unknown option '…'`, exit 1; codex 0.171: `error: unexpected
#: argument '…' found`, exit 2), so a prompt read as an option fails here as it does there.
_VALUED = {"claude": {"--output-format", "--model", "--input-format"},
           "codex": {"-m", "--model", "-c", "--config", "-p", "--profile", "-s", "--sandbox",
                     "-C", "--cd", "--color"},
           "agy": {"--model", "-m"}}
_FLAGS = {"claude": {"-p", "--print", "--verbose", "--dangerously-skip-permissions"},
          "codex": {"--skip-git-repo-check", "--json", "--full-auto", "--oss",
                    "--dangerously-bypass-approvals-and-sandbox"},
          "agy": set()}


def _prompt(name: str, argv: list[str]) -> tuple[str, str]:
    """The prompt and where it came from ("argv" or "stdin"), read as the real CLI reads it:
    agy's is the value of `-p`; claude's (`-p` is a flag) and codex's (after `exec`) is the
    positional argument, after `--` if there is one; without one, or as `-` (codex), stdin."""
    if name == "agy":
        if "-p" in argv and argv.index("-p") + 1 < len(argv):
            return argv[argv.index("-p") + 1], "argv"
        return "", "argv"
    rest = argv[1:] if name == "codex" and argv[:1] == ["exec"] else list(argv)
    positional: list[str] = []
    skip = False
    for index, arg in enumerate(rest):
        if skip:
            skip = False
        elif arg == "--":
            positional += rest[index + 1 :]
            break
        elif arg in _VALUED[name]:
            skip = True
        elif arg.startswith("-") and arg != "-":
            if arg in _FLAGS[name]:
                continue
            if name == "claude":
                _err(f"error: unknown option '{arg}'\n")
                raise SystemExit(1)
            _err(f"error: unexpected argument '{arg}' found\n")
            raise SystemExit(2)
        else:
            positional.append(arg)
    if positional and positional[-1] != "-":
        return positional[-1], "argv"
    return sys.stdin.read(), "stdin"


def _out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _err(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def _json_line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


class _Claude:
    """claude -p … --output-format stream-json --verbose (2.1)."""

    def __init__(self, prompt: str) -> None:
        self.session = str(uuid.uuid4())
        self.prompt = prompt

    def init(self) -> str:
        return _json_line({"type": "system", "subtype": "init", "cwd": os.getcwd(),
                           "session_id": self.session, "model": "claude-opus-4-5",
                           "claude_code_version": "2.1.197", "apiKeySource": "none"})

    def assistant(self, text: str) -> str:
        return _json_line({"type": "assistant", "session_id": self.session,
                           "message": {"role": "assistant", "type": "message",
                                       "content": [{"type": "text", "text": text}]}})

    def rate_limit(self, status: str, resets_at: Any, resets_in: Any = None) -> str:
        info: dict[str, Any] = {"status": status, "rateLimitType": "five_hour",
                                "overageStatus": "rejected", "isUsingOverage": False}
        if resets_in is not None:
            resets_at = time.time() + float(resets_in)
        if resets_at is not None:
            info["resetsAt"] = int(resets_at)
        return _json_line({"type": "rate_limit_event", "rate_limit_info": info,
                           "session_id": self.session, "uuid": str(uuid.uuid4())})

    def result(self, text: str, *, is_error: bool) -> str:
        return _json_line({"type": "result", "subtype": "success", "is_error": is_error,
                           "duration_ms": 1200, "num_turns": 1, "result": text,
                           "session_id": self.session, "total_cost_usd": 0})


def _preset(name: str, answer: dict[str, Any], prompt: str) -> tuple[str, str, int]:
    """stdout, stderr and exit code of `answer`'s kind, in `name`'s real format."""
    kind = answer.get("kind", "post")
    post = str(answer.get("post", "ok"))
    notice = str(answer.get("notice", NOTICES[name]))
    if name == "claude":
        c = _Claude(prompt)
        if kind in ("post", "flood"):
            return (c.init() + c.rate_limit("allowed", answer.get("resets_at")) + c.assistant(post)
                    + c.result(post, is_error=False), "", 0)
        if kind == "limit":
            return (c.init() + c.rate_limit("rejected", answer.get("resets_at"),
                                            answer.get("resets_in"))
                    + c.assistant(notice) + c.result(notice, is_error=True), "", 1)
        if kind == "login":
            text = "Not logged in · Please run /login"
            return c.init() + c.assistant(text) + c.result(text, is_error=True), "", 1
        if kind == "network":
            text = "API Error: Unable to connect to API (ConnectionRefused)"
            return c.init() + c.assistant(text) + c.result(text, is_error=True), "", 1
        if kind == "crash":
            return (c.init(), "TypeError: Cannot read properties of undefined (reading 'map')\n"
                    "    at file:///claude/cli.js:2417:18\n", 1)
    if name == "codex":
        banner = CODEX_BANNER.format(cwd=os.getcwd(), session=uuid.uuid4(), prompt=prompt)
        if kind in ("post", "flood"):
            return post + "\n", banner + "codex\n" + post + "\ntokens used\n1,234\n", 0
        if kind == "limit":
            return "", banner + f"■ {notice}\n", 1
        if kind == "network":
            return "", banner + "".join(f"ERROR: Reconnecting... {i}/5\n" for i in range(1, 6)) + (
                "ERROR: stream disconnected before completion: error sending request for url "
                "(https://api.openai.com/v1/responses)\n"), 1
        if kind == "unauthenticated":
            return "", banner + ("ERROR: unexpected status 401 Unauthorized: Missing bearer or "
                                 "basic authentication in header\n"), 1
        if kind == "crash":
            return "", banner + ("thread 'main' panicked at codex-rs/core/src/codex.rs:912:14:\n"
                                 "called `Option::unwrap()` on a `None` value\n"), 101
    if name == "agy":
        if kind in ("post", "flood"):
            return post + "\n", "", 0
        if kind == "limit":
            return "", f"Error: {notice}\n", 1
        if kind == "network":
            return "", ('Error: Post "https://cloudcode-pa.googleapis.com/v1internal:generateContent'
                        '": dial tcp: lookup cloudcode-pa.googleapis.com: no such host\n'), 1
        if kind == "unauthenticated":
            return "", "Error: not signed in: run `agy` to sign in with your Google account\n", 1
        if kind == "crash":
            panic = ("panic: runtime error: invalid memory address or nil pointer dereference\n"
                     "[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4b1f2a]\n")
            return "", panic, 2
    return "", f"stand-in {name}: unknown answer kind {kind!r}\n", 70


def _reconnect_forever(interval: float, prompt: str) -> None:
    """A37: real codex 0.171 with no network retries, then waits for the network forever."""
    _err(CODEX_BANNER.format(cwd=os.getcwd(), session=uuid.uuid4(), prompt=prompt))
    for attempt in range(1, 6):
        _err(f"ERROR: Reconnecting... {attempt}/5\n")
        time.sleep(min(interval, 0.2))
    _err("warning: Falling back from WebSockets to HTTPS transport. stream disconnected before "
         "completion: failed to lookup address information: Name does not resolve\n")
    while True:
        _err("ERROR: Reconnecting... waiting for network\n")
        time.sleep(interval)


def _flood(total: int, write: Any) -> None:
    """Megabytes of progress chatter: claude streams it as events on stdout, codex and agy
    print theirs on stderr (their stdout is the final message only)."""
    line = '{"type":"assistant","message":{"content":[{"type":"text","text":"' + "chatter " * 12
    line += '"}]}}\n'
    block = line * max(1, 65536 // len(line))
    written = 0
    while written < total:
        write(block)
        written += len(block)


def _charge(ledger: str, duration: Any) -> None:
    """Charge the call's virtual duration to the clock's ledger: one line, one append."""
    seconds = float(duration)
    if not 0 <= seconds < float("inf"):
        raise SystemExit(f"stand-in: duration must be a finite number >= 0, not {duration!r}")
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{seconds!r}\n".encode("ascii"))
    finally:
        os.close(fd)


def _spawn_grandchild(pidfile: str) -> None:
    code = "import time\nwhile True: time.sleep(1)\n"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)
    with open(pidfile, "w", encoding="utf-8") as handle:
        handle.write(str(child.pid))


def _standins_alive(log: str) -> list[int]:
    """Earlier stand-in calls of this log still running as this one starts (Linux /proc): a
    daemon must never run two calls at once (C1)."""
    here = os.path.dirname(os.path.realpath(sys.argv[0]))
    alive = []
    try:
        with open(log, encoding="utf-8") as handle:
            pids = [json.loads(line).get("pid") for line in handle if line.strip()]
    except (OSError, ValueError):
        return []
    for pid in pids:
        if not isinstance(pid, int) or pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
                state = stat.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{pid}/cmdline", "rb") as cmd:
                cmdline = cmd.read().decode("utf-8", "replace")
        except (OSError, IndexError):
            continue
        if state != "Z" and here in cmdline:
            alive.append(pid)
    return alive


def main(name: str, argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--version"]:
        _out({"claude": "2.1.197 (Claude Code) [stand-in]", "codex": "codex-cli 0.171.0 "
              "[stand-in]", "agy": "agy 1.0.0 [stand-in]"}.get(name, "stand-in") + "\n")
        return 0
    prompt, channel = _prompt(name, args)
    answer, source = _take_answer(name, _load_script())
    log = os.environ.get(LOG_ENV)
    if log:
        alive = _standins_alive(log)
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(_json_line({"cli": name, "argv": args, "answer": source,
                                     "pid": os.getpid(), "prompt_from": channel,
                                     "prompt": prompt, "alive_before": alive}))
    ledger = os.environ.get(CLOCK_ENV)
    if ledger:  # before any output: whatever the caller reads of this call comes after it
        _charge(ledger, answer.get("duration", DEFAULT_DURATION))
    if answer.get("grandchild_pidfile"):
        _spawn_grandchild(str(answer["grandchild_pidfile"]))
    time.sleep(float(answer.get("sleep", 0)))
    kind = answer.get("kind", "post")
    if kind == "hang":
        while True:
            time.sleep(3600)
    if kind == "reconnecting":
        _reconnect_forever(float(answer.get("interval", 1.0)), prompt)
    stdout, stderr, code = _preset(name, answer, prompt)
    stdout = str(answer.get("stdout", stdout))
    stderr = str(answer.get("stderr", stderr))
    if "stdout_hex" in answer:  # raw bytes, e.g. invalid UTF-8: written as they are
        sys.stdout.flush()
        os.write(1, bytes.fromhex(str(answer["stdout_hex"])))
    flood = int(answer.get("flood_bytes", 8 * 1024 * 1024 if kind == "flood" else 0))
    if name == "claude":
        # Real order: init and rate_limit_event first, then the turn's events, then the result.
        lines = stdout.splitlines(keepends=True)
        _err(stderr)
        _out("".join(lines[:2]))
        _flood(flood, _out)
        _out("".join(lines[2:]))
    else:
        _flood(flood, _err)
        _err(stderr)
        _out(stdout)
    return int(answer.get("exit", code))


if __name__ == "__main__":
    raise SystemExit(main(os.path.basename(sys.argv[0])))
