"""The SoC (layer 0): one typed object with the hardware numbers and capabilities of a chip,
loaded once from its sourced JSON file and handed to everything that depends on the chip."""

from .spec import (
    BUFFERS,
    DEFAULT_SOC,
    FEATURES,
    GIB,
    Capabilities,
    PathSpec,
    Soc,
    SocError,
    all_socs,
    list_socs,
    load_soc,
    parse_soc,
)

__all__ = [
    "BUFFERS", "DEFAULT_SOC", "FEATURES", "GIB", "Capabilities", "PathSpec", "Soc", "SocError",
    "all_socs", "list_socs", "load_soc", "parse_soc",
]
