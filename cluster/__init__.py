"""Where trials run: executors and the factory that makes them from configuration."""

from .config import ExecutorConfig
from .factory import make_executor
from .local import LocalExecutor

__all__ = ["ExecutorConfig", "LocalExecutor", "make_executor"]
