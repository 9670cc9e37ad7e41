"""Weft for Python: read and write a Weft data fabric from training code.

- :class:`weft.Client` — S3 (SigV4) and REST client for a hub or spoke, fork-safe.
- ``weft.torch`` — :class:`~weft.torch.WeftDataset`, :class:`~weft.torch.WeftShardDataset`,
  :class:`~weft.torch.HintingSampler`, :func:`~weft.torch.save_checkpoint`,
  :func:`~weft.torch.load_checkpoint` (imported on first use: ``import weft`` does not
  import PyTorch).
- ``weft.fsspec`` — :class:`~weft.fsspec.WeftFileSystem`; ``import weft`` registers the
  ``weft://`` protocol with fsspec, so ``fsspec.open("weft://bucket/key")`` works.

Endpoint and keys come from arguments or ``WEFT_ENDPOINT``, ``WEFT_ACCESS_KEY`` and
``WEFT_SECRET_KEY`` (falling back to ``WEFT_ROOT_ACCESS_KEY``/``WEFT_ROOT_SECRET_KEY``).
See docs/python.md.
"""

import importlib

from ._client import AccessDeniedError, Client, NotFoundError, WeftError, parse_url

__version__ = "0.1.0"

__all__ = ["Client", "WeftError", "NotFoundError", "AccessDeniedError", "parse_url",
           "WeftDataset", "WeftShardDataset", "HintingSampler", "save_checkpoint",
           "load_checkpoint", "WeftFileSystem", "__version__"]

_TORCH_NAMES = {"WeftDataset", "WeftShardDataset", "HintingSampler", "save_checkpoint",
                "load_checkpoint"}


def __getattr__(name):
    """Imports weft.torch / weft.fsspec on first use of one of their names."""
    if name in ("torch", "fsspec"):
        return importlib.import_module(f"{__name__}.{name}")
    if name in _TORCH_NAMES:
        return getattr(importlib.import_module(f"{__name__}.torch"), name)
    if name == "WeftFileSystem":
        return importlib.import_module(f"{__name__}.fsspec").WeftFileSystem
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _register_fsspec():
    try:
        import fsspec
    except ImportError:
        return
    fsspec.register_implementation("weft", "weft.fsspec.WeftFileSystem", clobber=True)


_register_fsspec()
