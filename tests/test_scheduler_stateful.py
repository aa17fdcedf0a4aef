"""SPEC 0.4: the shipped state machine (`autodev_core.testing`) drives the scheduler through
random teams, chains, installed CLIs, outcomes, messages, clock jumps, stops, pauses and gates,
checking SPEC A's invariants after every step."""

from __future__ import annotations

from autodev_core.testing import SchedulerMachine, scheduler_configs


class SchedulerRuns(SchedulerMachine):
    pass


class SmallTeams(SchedulerMachine):
    """Teams of one or two collide on engines far more often (A8, A16, A35)."""

    configs = scheduler_configs(max_team=2, limited_iterations=False)


TestSchedulerInvariants = SchedulerRuns.TestCase
TestSmallTeamInvariants = SmallTeams.TestCase
