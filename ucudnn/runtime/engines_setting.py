"""Whether benchmarks measure cuDNN's graph-API engine configurations, decided in one place.

An argument (`Handle(engines=...)`, `BenchmarkSettings(engines=...)`, `--engines`) beats
UCUDNN_ENGINES, which beats the default: on wherever engines can run (`engine_probe`). Off as
asked needs no device; anything else asks the probe, and an explicit "on" where engines cannot
run keeps the legacy algorithms alone, saying why once.
"""

from __future__ import annotations

import dataclasses
import functools
import logging

from ucudnn.core.checks import boolean
from ucudnn.runtime.engine_probe import engine_availability

logger = logging.getLogger(__name__)

# Where a setting comes from, and how `EnginesSetting.describe` says so.
_SOURCE_WORDS = {
    "default": "by default",
    "environment": "set by UCUDNN_ENGINES",
    "argument": "set by an argument",
}
SOURCES = tuple(_SOURCE_WORDS)


def engines_argument(value: object) -> bool | None:
    """An `engines` argument as every API takes it: None (not given), True or False."""
    return None if value is None else boolean(value, "engines")


@dataclasses.dataclass(frozen=True)
class EnginesRequest:
    """What was asked for (None: nothing, the default decides) and by whom."""

    asked: bool | None
    source: str

    @classmethod
    def of(cls, argument: object, environment: bool | None) -> EnginesRequest:
        """From an argument (None: not given; else True or False) and UCUDNN_ENGINES as read
        (`Config.engines`: None when not set)."""
        asked = engines_argument(argument)
        if asked is not None:
            return cls(asked, "argument")
        if environment is not None:
            return cls(environment, "environment")
        return cls(None, "default")


@dataclasses.dataclass(frozen=True)
class EnginesSetting:
    """The setting in effect, where it came from, and why engines are off where they were
    wanted (asked for, or by default) but cannot run; None otherwise."""

    enabled: bool
    source: str
    reason: str | None

    def describe(self) -> str:
        """For people: "on (by default)", "off (set by UCUDNN_ENGINES)", "off (by default:
        cuDNN 9.1.0 is older than 9.2.0)"..."""
        why = _SOURCE_WORDS[self.source] + (f": {self.reason}" if self.reason else "")
        return f"{'on' if self.enabled else 'off'} ({why})"

    def how_to_turn_off(self) -> str | None:
        """What turns engines off where this setting came from; None when they are off."""
        if not self.enabled:
            return None
        # An argument beats UCUDNN_ENGINES, so only another argument can turn them off.
        return "engines=False" if self.source == "argument" else "UCUDNN_ENGINES=off"


def engines_setting(request: EnginesRequest) -> EnginesSetting:
    """The setting in effect for `request`; asks the device unless engines are turned off."""
    if request.asked is False:
        return EnginesSetting(False, request.source, None)
    available, reason = engine_availability()
    if request.asked and not available:
        _warn_unavailable(reason)
    return EnginesSetting(available, request.source, reason)


@functools.cache  # once per process: the probe's answer does not change
def _warn_unavailable(reason: str | None) -> None:
    logger.warning(
        "graph-API engines were turned on but cannot run here: %s; measuring the legacy "
        "algorithms only",
        reason,
    )
