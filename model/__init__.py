"""commitsched: commit-ordering schedulers of parallel replicas, modelled and scored."""
__version__ = "0.1.0"
