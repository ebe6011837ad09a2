"""What drives the stages: the scheduler, the worker pool, the digest cache, progress."""
