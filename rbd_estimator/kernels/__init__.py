"""The compiled-kernel library's base: how packed parameter blobs are laid out (:mod:`.layout`).

Imports only numpy, so every layer can declare its blobs with it."""
from .layout import Layout, Packer

__all__ = ["Layout", "Packer"]
