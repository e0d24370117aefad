"""Where trials run: executors and the factory that makes them from configuration."""

from .config import ExecutorConfig
from .factory import make_executor
from .local import LocalExecutor
from .shared import SharedExecutor

__all__ = ["ExecutorConfig", "LocalExecutor", "SharedExecutor", "make_executor"]
