"""The stages a run pair passes through, cheapest first.

discover (list a run folder) -> pair (match buffers by step and name) -> size
(what sizes decide) -> hash (chunk digests decide equal pairs) -> scan (only
differing chunks reach a kernel) -> verdict (the first divergent step and its
groups). Rendering the verdict is ``fastdiff.render``'s.
"""
