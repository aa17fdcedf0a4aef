"""Every log line the scheduler writes, built here and only here (SPEC A, "Other log lines").

The wording is the SPEC's, character for character (`—`, `→`, `@`), so runs can be compared.
An engine is written as `str(engine)` says. `<time>` is `HH:MM` in the run's zone (seconds
truncated) when it falls on the same local day as the line, else `YYYY-MM-DD HH:MM`.
"""

from __future__ import annotations

from datetime import timedelta

from ..engine import Engine
from ..times import clock as clock  # `<time>`, there for `autodev status`
from ..times import local_clock as local_clock
from .policy import EMPTY_TURNS_PAUSE, GIVE_UP_AFTER

# -- learned (A39: these come first at one instant) -------------------------------------------


def limited_until(engine: Engine, when: str) -> str:
    return f"{engine} limited until {when}"


def limited_elsewhere(engine: Engine, when: str, source: str) -> str:  # docs/sharing.md
    """A limit another run sharing the account reported (wording ours; docs/sharing.md)."""
    return f"{engine} limited until {when} (reported by {source})"


#: docs/limits.md: how a provider's window is written in a line (its own name otherwise, `_`
#: as ` `).
_WINDOWS = {
    "five_hour": "five-hour", "seven_day": "seven-day", "seven_day_opus": "seven-day Opus",
    "seven_day_sonnet": "seven-day Sonnet", "": "usage",
}


def window_name(window: str) -> str:
    """`five_hour` -> `five-hour`: the window a reading names, as a line writes it."""
    return _WINDOWS.get(window, window.replace("_", " "))


def percent(utilization: float) -> int:
    """0.97 -> 97: a utilization as whole percent, rounded down (never shows more than used)."""
    return int(utilization * 100 + 1e-9)


def near_limit(engine: Engine, utilization: float, window: str, when: str,
               source: str = "") -> str:  # docs/limits.md (wording ours)
    """A usage reading at or above `Policy.headroom`: turns hand over until `when`."""
    said = f" (reported by {source})" if source else ""
    return (f"{engine} at {percent(utilization)}% of its {window_name(window)} window"
            f" — handing over until {when}{said}")


def posted_via(participant: str, engine: Engine) -> str:
    return f"{participant} posted via {engine}"


def could_not_reach(provider: str, when: str) -> str:  # A27
    return f"{provider} could not be reached; trying it again at {when}"


def reachable_again(provider: str) -> str:  # A27
    return f"{provider} is reachable again"


# -- decided ------------------------------------------------------------------------------------


def hop_limited(participant: str, source: Engine, target: Engine) -> str:  # A11
    return f"{participant}: {source} limited → {target}"


def hop_unreachable(participant: str, source: Engine, target: Engine) -> str:  # A26
    return f"{participant}: {source} unreachable → {target}"


def hop_near_limit(participant: str, source: Engine, target: Engine) -> str:  # docs/limits.md
    return f"{participant}: {source} near its limit → {target}"


def handover_near_limit(participant: str, source: Engine, other: str) -> str:  # docs/limits.md
    return f"{participant}: {source} near its limit — @{other} takes the turn"


def handover_limited(participant: str, other: str) -> str:  # A15
    return f"{participant} is rate limited — @{other} takes the turn"


def handover_unreachable(participant: str, provider: str, other: str) -> str:  # A36
    return f"{participant} cannot reach {provider} — @{other} takes the turn"


def every_participant_limited(what: str, when: str) -> str:  # A18
    return f"every participant limited — waiting for {what}, back first at {when}"


def no_provider_reachable(when: str) -> str:  # A27, A40
    return f"No provider can be reached; trying again at {when}"


def cannot_hand_over(participant: str, what: str, when: str) -> str:  # A35
    return f"{participant} cannot hand its turn over — waiting for {what}, back at {when}"


def lifted(participant: str, engine: Engine, primary: bool) -> str:  # A23
    if primary:
        return f"{participant}: limit lifted — back on its primary provider"
    return f"{participant}: limit lifted — back on {engine}"


def limit_lifted(engine: Engine) -> str:  # A23 (wording ours, docs/loop.md)
    """`engine`'s limit left the registry at its reset: said once, for every participant on it
    at once — also one with no chain, for whom `lifted` never comes."""
    return f"{engine} limit lifted at its reset — back for everyone on it"


def limit_cleared(engine: Engine, changed: bool) -> str:  # docs/cli.md (wording ours)
    """The operator lifted `engine`'s limit by hand (`autodev limits clear`)."""
    if changed:
        return f"{engine} limit cleared by hand — back for everyone on it"
    return f"{engine} limit cleared by hand — it had none"


def failed(participant: str, engine: Engine, what: str, when: str) -> str:  # A28
    return f"{participant} failed on {engine} ({what}); next attempt at {when}"


_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
          "eleven", "twelve")


def span(waited: timedelta) -> str:
    """How long a run waited before giving up, in words: "five hours" for the SPEC's policy
    (1 s + 1 + 2 + 4 + 8 + 15 + 30 min + 4 × 1 h), rounded to hours, minutes or seconds."""
    if waited >= timedelta(minutes=59, seconds=30):
        amount, unit = round(waited / timedelta(hours=1)), "hour"
    elif waited >= timedelta(seconds=59.5):
        amount, unit = round(waited / timedelta(minutes=1)), "minute"
    else:
        amount, unit = max(1, round(waited.total_seconds())), "second"
    number = _WORDS[amount] if amount < len(_WORDS) else str(amount)
    return f"{number} {unit}{'' if amount == 1 else 's'}"


def gave_up(what: str, attempts: int = GIVE_UP_AFTER, waited: str = "five hours") -> str:  # A29
    return (
        f"Gave up after {attempts} failed attempts in a row, over {waited} ({what}); "
        "run paused — resume to try again."
    )


def empty_turns(participant: str, count: int = EMPTY_TURNS_PAUSE) -> str:  # A31
    return (
        f"{participant} ended {count} turns in a row without a post; "
        "run paused — resume to try again."
    )


def not_logged_in(provider: str, participant: str) -> str:  # A32
    return f"{provider} is not logged in ({participant}); run paused — log in, then resume."


def max_iterations_reached(count: int) -> str:  # A30, A43 (wording ours: the SPEC is silent)
    return f"Reached max_iterations ({count} calls); run stopped."


def max_runtime_reached(minutes: float) -> str:  # A21, A43 (wording ours: the SPEC is silent)
    return f"Reached max_runtime_min ({minutes:g} min of calls); run stopped."


# -- what failed (A28) --------------------------------------------------------------------------


def exited(cli: str, code: int) -> str:
    return f"{cli} exited with code {code}"


def timed_out(cli: str) -> str:
    return f"{cli} timed out"


def ended_without_post(participant: str) -> str:
    return f"{participant} ended the turn without a post"


# -- a shared reset not trusted blindly (docs/sharing.md "Clocks"; wording ours) ---------------


def reset_not_vouched(engine: Engine, read: str, form: str, skew: str, shared: str) -> str:
    """This run read `engine`'s reset `read` from a clock time or a date (`form`) on a clock
    `skew` (e.g. `20 min 0 s ahead of`) Redis's: shared as unread, until `shared`."""
    written = "clock time" if form == "clock" else form
    return (f"limit sharing: {engine}'s reset {read} was read from a {written} on this "
            f"machine's clock, {skew} the Redis server's; not vouched for: shared as unread, "
            f"until {shared} (the A6 default after it was seen)")


def reset_beyond_any_window(engine: Engine, source: str, claimed: str, days: int,
                            taken: str) -> str:
    """`source` shared a read reset of `engine` (`claimed`) further after it was seen than any
    window of the provider (`days`) plus A6's grace: taken as unread, until `taken`."""
    return (f"limit sharing: {source} reported {engine} limited until {claimed}, beyond any "
            f"window of {engine.provider} ({days} days); taken as unread, until {taken} (the "
            "A6 default after it was seen)")
