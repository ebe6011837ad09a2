"""The result model: every value fastdiff's jobs produce, and nothing else.

A leaf package: it imports nothing of fastdiff outside itself (a test,
``tests/test_imports.py``, holds it to that), so the kernels, the stages,
the engine, the use cases and the renderers all read the same values
without depending on each other. One style of value class (``value.Value``:
immutable ``__slots__`` classes with equality, ``replace`` and ``as_dict``).

- ``value``: the base class;
- ``statuses``: buffer statuses, verdicts, group statuses, roles and
  problem kinds, enum-like members compared directly;
- ``exits``: the exit codes a verdict gives;
- ``tolerance``: ``Tolerance`` and its exact integer form;
- ``facts``: the one table of the facts a comparison reports about a
  buffer pair (``FACTS``: names, merges, JSON encoders, the compiled
  engine's slots);
- ``findings``: what the stages find beyond the facts, as data (a
  structural change, the cause of a magnitude, the rank pattern, where a
  divergence was born, timeline cells, typed notes); ``render`` alone
  puts them into words;
- ``results``: a run pair's report (``Report``, ``BufferResult``, ...)
  and ``Work``;
- ``sweep``, ``stats``, ``rerun``, ``watch``, ``hashrun``: the results of
  the other jobs (their use-case modules compute them and re-export the
  classes under their old names);
- ``inputs``: how a declared input is written (``name@prev``).
"""
