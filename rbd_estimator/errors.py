"""The package's exception types. Every message names the offending joint, link, sensor or parameter."""


class ModelError(ValueError):
    """The robot description cannot be turned into a model (malformed URDF, bad tree, bad inertia, ...)."""


class ConfigError(ValueError):
    """A sensor configuration is invalid (unknown frame, sensor or parameter, bad value)."""


class IllPosedError(ValueError):
    """The sensor set does not determine the unknowns; the message says which are undetermined."""


class DescriptionUnavailable(RuntimeError):
    """No robot description in the parameter nor on its topic (the message says what to do)."""


class ModelWarning(UserWarning):
    """The robot description is computable but physically doubtful (an inertia that no rigid body has).

    Issued once per link, naming it, the defect and its size; ``strict=True`` turns it into :class:`ModelError`.
    """


class ConditioningWarning(UserWarning):
    """At the nominal stance the sensors leave a contact-wrench direction to the prior (it is
    estimated finitely, with the prior's variance): issued at planning, naming the components."""
