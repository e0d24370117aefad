"""A task file's reference: ``Model(*init_args)`` built lazily, its read state as inputs.

A module's parameters and buffers that its forward reads are *kernel inputs*: a kernel
cannot see the module, so the task passes them after the forward inputs, with the values
the module really holds (however its constructor initialised them). The reference then
runs the module with those tensors in place of its own (``torch.func.functional_call``),
so the kernel and the reference always read the same numbers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from .task import SEEDED_RNG


class ModuleReference:
    """``reference(*inputs)`` for a task file: builds ``Model(*init_args)`` lazily.

    One module per (device, dtype) is built with a fixed seed (parameters are then
    deterministic) on the inputs' device - ``meta`` for shape inference, CPU for
    correctness - and cast to the inputs' floating dtype when it is not fp32.  The
    module stays in its default (training) mode, as KernelBench calls it.
    ``state_names``: module tensors passed as the last inputs (see the module docstring).
    """

    def __init__(self, model_cls: type[nn.Module], init_args: dict[str, Any],
                 positional: bool = True, seed: int = 0,
                 state_names: Sequence[str] = ()) -> None:
        self.model_cls = model_cls
        self.init_args = dict(init_args)
        self.positional = positional
        self.seed = seed
        self.state_names = tuple(state_names)
        self._cache: dict[tuple[str, torch.dtype | None], nn.Module] = {}
        self.__name__ = f"{model_cls.__name__}.forward"

    def build(self, device: str | torch.device = "cpu", dtype: torch.dtype | None = None) -> nn.Module:
        """Instantiate the module on ``device`` (deterministic parameters)."""
        with SEEDED_RNG, torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            with torch.device(device):
                if self.positional:
                    model = self.model_cls(*self.init_args.values())
                else:
                    model = self.model_cls(**self.init_args)
        if dtype is not None and dtype != torch.float32 and dtype.is_floating_point:
            model = model.to(dtype)
        return model

    def _module(self, device: torch.device, dtype: torch.dtype | None) -> nn.Module:
        key = (device.type, dtype)
        if key not in self._cache:
            self._cache[key] = self.build(device, dtype)
        return self._cache[key]

    def call(self, module: nn.Module, inputs: Sequence[Any]) -> Any:
        """``module`` run on the forward inputs, its read state replaced by the last inputs
        (cloned: a training-mode BatchNorm updates its running statistics in place)."""
        n = len(inputs) - len(self.state_names)
        if not self.state_names:
            return module(*inputs)
        own = module_state(module)
        state = {k: _as_held(v, own[k]) for k, v in zip(self.state_names, inputs[n:], strict=True)}
        return torch.func.functional_call(module, state, tuple(inputs[:n]))

    def __call__(self, *inputs: Any) -> Any:
        tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
        device = tensors[0].device if tensors else torch.device("cpu")
        dtype = next((t.dtype for t in tensors if t.dtype.is_floating_point), None)
        # on meta inputs, a tensor the forward makes without device= is meta too
        with torch.device("meta") if device.type == "meta" else contextlib.nullcontext():
            return self.call(self._module(device, dtype), inputs)

    def with_init_args(self, init_args: dict[str, Any]) -> ModuleReference:
        """Same model class with other constructor args (used by ``with_shape``)."""
        return ModuleReference(self.model_cls, init_args, self.positional, self.seed, self.state_names)

    def with_state(self, state_names: Sequence[str]) -> ModuleReference:
        """Same module, ``state_names`` passed as inputs after the forward inputs."""
        return ModuleReference(self.model_cls, self.init_args, self.positional, self.seed, state_names)

    def module_tensors(self, dtype: torch.dtype | None = None) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
        """Parameters and buffers of the module (meta): shape and dtype by state name."""
        model = self.build("meta", dtype)
        return {k: (tuple(v.shape), v.dtype) for k, v in module_state(model).items()}

    def state_value(self, name: str, dtype: torch.dtype | None) -> torch.Tensor:
        """The value the CPU module (built in ``dtype``) holds for state tensor ``name``."""
        state = module_state(self._module(torch.device("cpu"), dtype))
        return state[name].detach().clone()


def module_state(module: nn.Module) -> dict[str, torch.Tensor]:
    """Every tensor a module holds, by name: parameters and buffers, non-persistent ones too
    (``register_buffer(..., persistent=False)`` is left out of ``state_dict`` but read by forward
    all the same, and ``functional_call`` replaces it by name)."""
    return {**dict(module.named_parameters()), **dict(module.named_buffers())}


def _as_held(value: Any, held: torch.Tensor) -> torch.Tensor:
    """A passed state value in the shape and dtype the module holds it: a one-element tensor
    arrives as a Python number (a kernel Scalar) or a 0-d tensor; a CPU value is copied."""
    if not isinstance(value, torch.Tensor):
        return torch.full(held.shape, value, dtype=held.dtype, device=held.device)
    if value.device.type == "meta":
        return value.reshape(held.shape).to(held.dtype)
    return value.reshape(held.shape).to(held.dtype).clone()
