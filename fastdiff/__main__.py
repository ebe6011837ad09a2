"""``python -m fastdiff``."""

from .cli import launch

launch()
