"""The reference CLI (SPEC C4-C8, A14): every command, and user mistakes as one clear sentence
with a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from autodev_shell.cli import main
from autodev_shell.cli.commands import start_run
from autodev_shell.clock import FakeClock
from autodev_shell.runner import RunSummary
from autodev_shell.standins import install_standins, standin_env, write_script
from autodev_shell.store.folder import run_db
from autodev_shell.store.run_store import RunStore
from autodev_shell.store.runlock import RunLock
from autodev_shell.team import load_team


def _team(root: Path, files: dict[str, str]) -> Path:
    team = root / "team"
    team.mkdir()
    for name, text in files.items():
        (team / name).write_text(text, encoding="utf-8")
    return team


def _run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autodev_shell.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env or dict(os.environ),
    )


def test_A14_team_edit_prints_the_participants_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    team = _team(tmp_path, {"ana.md": "---\nprovider: claude\n---\nhi\n"})
    assert main(["team", "edit", "ana", "--team", str(team)]) == 0
    assert capsys.readouterr().out.strip() == str((team / "ana.md").resolve())


def test_A14_team_edit_of_an_unknown_id_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    team = _team(tmp_path, {"ana.md": "---\nprovider: claude\n---\n"})
    assert main(["team", "edit", "bob", "--team", str(team)]) == 2
    err = capsys.readouterr().err
    assert "no participant 'bob'" in err and "ana" in err


@pytest.mark.parametrize(
    ("files", "needle"),
    [
        ({"ana.md": "---\nprovider: gpt\n---\n"}, "ana.md:2: unknown provider 'gpt'"),
        (
            {"ana.md": "---\nprovider: claude\nfailover: [codex, 'x:y']\n---\n"},
            "ana.md:3: bad failover entry 'x:y'",
        ),
        ({"ana.md": "no front matter"}, "ana.md:1: no YAML front matter"),
        (
            {"ana.md": "---\nprovider: claude\n---\n", "Ana.md": "---\nprovider: codex\n---\n"},
            "duplicate participant id",
        ),
        (
            {"ana.md": "---\nprovider: claude\n---\n", "autodev.yaml": "max_iteration: 3\n"},
            "autodev.yaml: unknown key 'max_iteration'",
        ),
        (
            {"ana.md": "---\nprovider: claude\n---\n", "autodev.yaml": "commands: {gpt: [x]}\n"},
            "commands.gpt: unknown provider",
        ),
        (
            {"ana.md": "---\nprovider: claude\n---\n", "autodev.yaml": "order: [ana, ana]\n"},
            "order: 'ana' is listed twice",
        ),
        # C5, C6: one clear line, exit 2, for each of these.
        (
            {"ana.md": "---\nprovider: claude\nmodel: opus\nprovider: codex\n---\n"},
            "ana.md:4: duplicate key 'provider' (first given on line 2)",
        ),
        (
            {"ana.md": "---\nprovider: claude\n---\n",
             "autodev.yaml": "max_iterations: 3\ntimezone: UTC\nmax_iterations: 9\n"},
            "autodev.yaml:3: duplicate key 'max_iterations' (first given on line 1)",
        ),
        (
            {"ana.md": "---\nprovider: claude\n---\n",
             "autodev.yaml": "commands:\n  codex: {timeout: 5}\n  codex: {timeout: 9}\n"},
            "autodev.yaml:3: duplicate key 'codex'",
        ),
        (
            {"ana.md": "---\nprovider: claude\n---\n", "autodev.yaml": "max_runtime_min: .inf\n"},
            "max_runtime_min: must be a positive, finite number, not inf",
        ),
        (
            {"ana.md": "---\nprovider: claude\n---\n", "autodev.yaml": "max_runtime_min: .nan\n"},
            "max_runtime_min: must be a positive, finite number, not nan",
        ),
        (
            {"ana.md": "---\nprovider: claude\n---\n",
             "autodev.yaml": "max_runtime_min: 1.0e+300\n"},
            "max_runtime_min: 1e+300 is more than",
        ),
        (
            {"ana.md": "---\nprovider: claude\n---\n",
             "autodev.yaml": "commands:\n  claude: {timeout: .nan}\n"},
            "commands.claude.timeout must be a positive number of seconds, not nan",
        ),
        (
            {"ana.md": "---\nprovider: claude\n---\n",
             "autodev.yaml": "commands:\n  claude: {timeout: .inf}\n"},
            "commands.claude.timeout must be a positive number of seconds, not inf",
        ),
    ],
)
def test_C5_a_bad_team_is_one_clear_line_and_nothing_starts(
    tmp_path: Path, files: dict[str, str], needle: str
) -> None:
    team = _team(tmp_path, files)
    done = _run_cli("run", str(team), "--run", str(tmp_path / "run"))
    assert done.returncode == 2
    assert needle in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # one clear line
    assert not (tmp_path / "run" / "run.db").exists()  # nothing started


def test_C6_a_missing_cli_leaves_no_run_folder_behind(tmp_path: Path) -> None:
    # C5: the team is checked before anything is made.
    team = _team(tmp_path, {"ana.md": "---\nprovider: agy\n---\n"})
    empty = tmp_path / "empty-path"
    empty.mkdir()
    env = dict(os.environ, PATH=str(empty))
    run_dir = tmp_path / "runs" / "first"
    done = _run_cli("run", str(team), "--run", str(run_dir), env=env)
    assert done.returncode == 2
    assert "no installed CLI" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()


def test_C5_a_participant_file_with_a_byte_order_mark_runs(tmp_path: Path) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "ana.md").write_bytes("\ufeff---\nprovider: codex\n---\nFix.\n".encode())
    assert [(m.id, m.provider, m.prompt) for m in load_team(team).members] == [
        ("ana", "codex", "Fix.")
    ]


def test_C6_a_participant_with_no_installed_cli_is_refused(tmp_path: Path) -> None:
    team = _team(tmp_path, {"ana.md": "---\nprovider: agy\n---\n"})
    with pytest.raises(Exception) as caught:
        start_run(
            load_team(team),
            tmp_path / "run",
            run_id="t",
            clock=FakeClock(datetime(2026, 12, 1, tzinfo=UTC)),
            installed=frozenset(),
        )
    assert "ana" in str(caught.value) and "no installed CLI" in str(caught.value)


@pytest.mark.parametrize("command", [["status"], ["stop"], ["say", "hello"], ["lane", "ana"]])
def test_C6_commands_on_an_unknown_run_say_so(tmp_path: Path, command: list[str]) -> None:
    done = _run_cli(*command, "--run", str(tmp_path / "nowhere"))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert str(tmp_path / "nowhere") in done.stderr


def test_C4_a_second_daemon_on_the_same_run_is_refused(tmp_path: Path) -> None:
    team = _team(tmp_path, {"ana.md": "---\nprovider: claude\n---\n"})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = standin_env(install_standins(tmp_path / "bin"))
    held = RunLock.acquire(run_db(run_dir), run="t")
    try:
        done = _run_cli("run", str(team), "--run", str(run_dir), env=env)
    finally:
        held.release()
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert str(os.getpid()) in done.stderr  # the refusal names who holds the run


def test_C6_a_corrupt_database_is_one_clear_sentence(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run_db(run_dir).write_bytes(b"this is not a database, just text " * 100)
    done = _run_cli("status", "--run", str(run_dir))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "run.db" in done.stderr


# One run's story through every command, in the order a user types them.
def test_C6_run_status_say_stop_through_real_stand_in_clis(tmp_path: Path) -> None:
    """A run on stand-in CLIs: `say` posts to the thread, `status` reads it, `stop` ends it."""
    team = _team(
        tmp_path,
        {"ana.md": "---\nprovider: claude\n---\n", "rui.md": "---\nprovider: codex\n---\n"},
    )
    bin_dir = install_standins(tmp_path / "bin")
    script = write_script(tmp_path / "script.json", {"default": {"post": "ok", "sleep": 0.05}})
    env = standin_env(bin_dir, script)
    run_dir = tmp_path / "run"
    result: dict[str, object] = {}

    def daemon() -> None:
        from autodev_shell.clock import SystemClock

        result["summary"] = start_run(
            load_team(team),
            run_dir,
            run_id="t",
            clock=SystemClock(),
            env=env,
            installed=frozenset({"claude", "codex"}),
            timezone="UTC",
            stop_at=datetime.now(UTC) + timedelta(seconds=60),
        )

    thread = threading.Thread(target=daemon)
    thread.start()
    try:
        deadline = datetime.now(UTC) + timedelta(seconds=30)
        while not run_db(run_dir).exists() and datetime.now(UTC) < deadline:
            threading.Event().wait(0.05)
        assert main(["say", "please", "review", "--run", str(run_dir)]) == 0
        while datetime.now(UTC) < deadline:
            store = RunStore.open(run_db(run_dir), check=False)
            try:
                texts = [p.text for p in store.thread()]
            finally:
                store.close()
            if "please review" in texts and len(texts) >= 3:
                break
            threading.Event().wait(0.1)
        assert main(["stop", "--run", str(run_dir)]) == 0
    finally:
        thread.join(timeout=60)
    assert not thread.is_alive()
    summary = result["summary"]
    assert isinstance(summary, RunSummary)
    assert summary.status == "stopped"
    store = RunStore.open(run_db(run_dir), check=False)
    try:
        thread_posts = store.thread()
    finally:
        store.close()
    assert "please review" in [p.text for p in thread_posts]
    assert {p.participant for p in thread_posts} >= {"ana", "rui", "user"}
    status = _run_cli("status", "--run", str(run_dir))
    assert status.returncode == 0
    assert "status: stopped" in status.stdout
    assert "confirmed by sqlite" in status.stdout
    lane = _run_cli("lane", "ana", "--run", str(run_dir))
    assert lane.returncode == 0 and "ana on claude" in lane.stdout


def test_C6_demo_shows_failover_waits_and_persistence(tmp_path: Path) -> None:
    from autodev_shell.cli.demo import run_demo

    summary, lines = run_demo(tmp_path / "demo", speed=1200.0, span=timedelta(hours=2))
    text = "\n".join(lines)
    assert summary.status == "stopped"
    assert "hops along a failover chain: 0" not in text
    assert "hops along a failover chain: " in text
    assert "handovers to a colleague: 0" not in text
    assert "handovers to a colleague: " in text
    assert "waits with nothing able to run: 0" not in text
    assert "waits with nothing able to run: " in text
    # The summary and `autodev status` (printed below it) count calls alike.
    (summary_calls,) = [line.split(";")[0] for line in lines if "final status:" in line]
    (status_calls,) = [line for line in lines if line.startswith("calls: ") and ";" not in line]
    assert summary_calls == status_calls
    assert "confirmed by sqlite" in text
    assert "integrity check: ok" in text
    log = (tmp_path / "demo" / "run" / "autodev.log").read_text(encoding="utf-8")
    assert "claude limited until" in log
    assert "ana: claude limited → codex" in log
    assert "codex could not be reached; trying it again at" in log
    assert "codex is reachable again" in log
    assert "eva failed on agy (agy exited with code 2); next attempt at" in log


def test_B14_a_corrupt_store_offers_the_checkpoint_and_restore_brings_it_back(
    tmp_path: Path,
) -> None:
    from autodev_core.control.identity import resolve_active_identity
    from autodev_shell.durability.writes import Durability
    from autodev_shell.store.run_store import NewPost

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    now = datetime(2026, 12, 1, 9, tzinfo=UTC)
    identity = resolve_active_identity(run_id="t")
    store = RunStore.open(run_db(run_dir), create=True, run_id="t", now=now)
    durability = Durability.open(store, identity)
    for revision in (1, 2):
        post = NewPost(participant="ana", engine="claude", text=f"post {revision}", at=now)
        result = durability.persist_revision(revision, [post], "", identity=identity, now=now)
        assert result.outcome == "committed"
    # As the daemon does when it stops: the checkpoint is brought level with the store (B14;
    # between syncs it may be some revisions behind).
    durability.sync_replicas(now=now, flush=True)
    store.close()
    data = run_db(run_dir).read_bytes()
    run_db(run_dir).write_bytes(data[: len(data) // 2])  # truncated: half a database
    for suffix in ("-wal", "-shm"):
        Path(str(run_db(run_dir)) + suffix).unlink(missing_ok=True)
    status = _run_cli("status", "--run", str(run_dir))
    assert status.returncode == 2 and "Traceback" not in status.stderr
    assert f"autodev restore --run {run_dir}" in status.stderr
    restored = _run_cli("restore", "--run", str(run_dir))
    assert restored.returncode == 0, restored.stderr
    store = RunStore.open(run_db(run_dir))
    try:
        assert [p.text for p in store.thread()] == ["post 1", "post 2"]
    finally:
        store.close()
    # Now the store is as new as the checkpoint: restoring again is refused (B14).
    again = _run_cli("restore", "--run", str(run_dir))
    assert again.returncode == 1 and "nothing to restore" in again.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "TEAM", "--fast", "-1"], "must be a positive number"),
        (["run", "TEAM", "--fast", "0"], "must be a positive number"),
        (["run", "TEAM", "--fast", "nan"], "must be a positive number, not 'nan'"),
        (["run", "TEAM", "--fast", "inf"], "must be a positive number, not 'inf'"),
        (["run", "TEAM", "--fast", "1e308"], "must be at most 100000, not '1e308'"),
        (["lane", "../etc", "--run", "RUN"], "malformed participant id"),
    ],
)
def test_C6_bad_arguments_are_one_clear_line(tmp_path: Path, args: list[str], needle: str) -> None:
    team = _team(tmp_path, {"ana.md": "---\nprovider: claude\n---\n"})
    (tmp_path / "run").mkdir()
    argv = [str(team) if a == "TEAM" else str(tmp_path / "run") if a == "RUN" else a for a in args]
    done = _run_cli(*argv)
    assert done.returncode == 2
    assert needle in done.stderr and "Traceback" not in done.stderr


def test_C6_a_file_system_refusal_is_one_clear_line(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x", encoding="utf-8")
    done = _run_cli("demo", "--dir", str(blocker))
    assert done.returncode == 2
    assert str(blocker) in done.stderr and "Traceback" not in done.stderr


def test_the_demo_summary_counts_calls_as_status_does() -> None:
    """The summary takes the stored count when it has it (C7: 140 vs 141)."""
    from autodev_shell.cli.demo import summary_lines
    from autodev_shell.runner import RunSummary

    summary = RunSummary(status="stopped", events=9, calls=140, posts=(), revisions=9,
                         persistence="confirmed")
    lines = summary_lines(summary, [], Path("/run"), ["calls: 141"], 141)
    assert "calls: 141; final status: stopped" in lines
