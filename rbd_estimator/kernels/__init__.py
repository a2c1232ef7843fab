"""The one compiled-kernel library, below every other layer:

* :mod:`.layout`: how packed parameter blobs are laid out (:class:`Layout` headers and records,
  :class:`Packer`) — the one header convention and packer;
* :mod:`.spatial`: the compiled spatial algebra (Plücker transforms as ``plux(E, r)``, cross
  products, rigid-body and 6 × 6 inertias), inlined into the kernels;
* :mod:`.joints`: the joint type codes, the packed joint record and the one compiled joint
  transform.

Every compiled kernel of ``model/``, ``dynamics/`` and ``estimation/`` builds on these; the readable
counterparts are :mod:`rbd_estimator.spatial` and :mod:`rbd_estimator.model.joints`."""
from .layout import Layout, Packer

__all__ = ["Layout", "Packer"]
