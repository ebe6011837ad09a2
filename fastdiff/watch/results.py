"""What a watch reports: the result model's (``model.watch``), kept
importable here."""

from __future__ import annotations

from ..model.watch import STOP_REASONS, StepReport, WatchSummary

__all__ = ["STOP_REASONS", "StepReport", "WatchSummary"]
