"""``python -m fastdiff.presets``: write ``parsed.py`` from the preset files."""

from . import write_parsed

print(f"wrote {write_parsed()}")
