"""The node's ROS parameters, declared from the one schema (:func:`~rbd_estimator.runtime.params.node_schema`).

:class:`DeclaredParameters` declares on an rclpy node every parameter of the schema that applies to
its current values — the node-only parameters, the list parameters, and the fields of every sensor,
contact, force-torque offset, extra body and loop those lists name — each with a
``ParameterDescriptor`` made from its :class:`~rbd_estimator.schema.Field` (type, description,
range, allowed values and when a change takes effect in ``additional_constraints``), so that
``ros2 param list`` and ``ros2 param describe`` show the whole sensor set. After every successful
change (rclpy's post-set callback: the set callback itself cannot declare) it declares the fields
of the names a list gained and undeclares the defaults of the names it lost.

Decisions:

* **Given and default values.** A parameter given at start-up or set later is *given*; one this
  class declared with the schema's default, never set, is a *default*. The parsers read the given
  values only (:meth:`DeclaredParameters.values`, :meth:`DeclaredParameters.after`): a default shows
  what applies, and dropping a sensor from its list drops its defaults with it; its given
  parameters must still be deleted in the same call (they would be read by nobody: refused, naming
  them). A name brought back takes the schema's defaults for the fields not set with it, not
  the start-up values (those deleted with it): what the set callback validated is what runs.
* **Static and dynamic typing.** Parameters with exact names (node-only ones, lists, ``floating_base``…)
  are statically typed: rclpy refuses a value of another type before the set callback. The
  fields of a named instance (``ft.<name>.*``, ``contact.<name>.*``, ``imu.*``, ``ft_offsets.<sensor>``,
  ``loop.<name>.*``, ``body.<name>.*``) are dynamically typed, because rclpy refuses to delete a
  statically typed parameter and these must go with their instance; the set callback checks
  their type through the schema. A pre-set callback turns an integer given for a double (``ros2
  param set … rate_hz 500``) into a double, and an empty array of any type (``[]`` has no ROS
  type) into an empty array of the parameter's type.
* **No read-only descriptor.** rclpy's ``read_only`` refuses every change after the declaration,
  for good (even ``set_descriptor`` cannot lift it), so ``robot_description`` could not be fixed in
  the unconfigured state. The parameters whose change needs a new configure say so in
  ``additional_constraints``; the node refuses them while active.
* **Unknown names** stay allowed by rclpy (``allow_undeclared_parameters``), so that a new sensor's
  parameters can be set in the same call as its list entry; the node's set callback refuses any
  name the schema does not read, naming the closest valid one.
"""
from __future__ import annotations

import contextlib
import threading

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.exceptions import ParameterException
from rclpy.parameter import Parameter

from ..errors import ConfigError, ModelError
from ..schema import CHANGES, Field
from ..runtime.params import ROS_PARAMETERS, node_schema

_ROS_TYPES = {"bool": Parameter.Type.BOOL, "integer": Parameter.Type.INTEGER, "double": Parameter.Type.DOUBLE,
              "string": Parameter.Type.STRING, "string_array": Parameter.Type.STRING_ARRAY,
              "double_array": Parameter.Type.DOUBLE_ARRAY}
_INT64 = 2 ** 63 - 1


def descriptor(name: str, field: Field, static: bool) -> ParameterDescriptor:
    """The ROS descriptor of the parameter ``name`` (see the module docstring for ``static``)."""
    notes = [field.constraints()] if field.constraints() else []
    notes.append(f"change: {CHANGES[field.change]}")
    if field.required:
        notes.insert(0, "required")
    d = ParameterDescriptor(name=name, type=_ROS_TYPES[field.type].value, description=field.description,
                            additional_constraints="; ".join(notes), dynamic_typing=not static)
    low = field.gt if field.gt is not None else field.ge
    if field.type == "double" and (low is not None or field.le is not None):
        d.floating_point_range = [FloatingPointRange(from_value=float("-inf") if low is None else float(low),
                                                     to_value=float("inf") if field.le is None else float(field.le),
                                                     step=0.0)]
    if field.type == "integer" and (low is not None or field.le is not None):
        d.integer_range = [IntegerRange(from_value=-_INT64 if low is None else int(low),
                                        to_value=_INT64 if field.le is None else int(field.le), step=0)]
    return d


def _ros_value(field: Field, value):
    return list(value) if isinstance(value, tuple) else value


def _coerced(p: Parameter, field: Field) -> Parameter:
    """``p`` with an integer given for a double (or integers for doubles) as doubles, and an empty
    array of any type as an empty array of the field's type."""
    target = _ROS_TYPES[field.type]
    if p.type_ == target or p.type_ == Parameter.Type.NOT_SET:
        return p
    if target == Parameter.Type.DOUBLE and p.type_ == Parameter.Type.INTEGER:
        return Parameter(p.name, target, float(p.value))
    if target == Parameter.Type.DOUBLE_ARRAY and p.type_ == Parameter.Type.INTEGER_ARRAY:
        return Parameter(p.name, target, [float(v) for v in p.value])
    if field.type.endswith("_array") and isinstance(p.value, (list, tuple, bytes)) and len(p.value) == 0:
        return Parameter(p.name, target, [])
    return p


class DeclaredParameters:
    """Declares the schema's parameters on ``node`` and keeps them declared as its values change.

    Construct it in the node's ``__init__`` in place of ``add_on_set_parameters_callback(on_set)``:
    it declares the parameters, then registers ``on_set`` (skipped for its own declarations) and
    its pre-set and post-set callbacks. ``on_set`` validates a change with :meth:`after`.
    """

    def __init__(self, node, on_set, schema=node_schema):
        self._node, self._schema = node, schema
        self._lock = threading.RLock()
        self._local = threading.local()
        self._given = {n for n, p in node.get_parameters_by_prefix("").items() if p.type_ != Parameter.Type.NOT_SET}
        self._defaulted: set[str] = set()
        self._described: dict[str, Field] = {}
        # rclpy declares the start-up values statically typed: a misspelled name, or a value of the
        # wrong type, could then be neither deleted nor fixed without a restart
        for name in self._given:
            if not name.startswith(ROS_PARAMETERS):
                node.set_descriptor(name, ParameterDescriptor(dynamic_typing=True))
        with self._declaring():
            self._sync()
        node.add_pre_set_parameters_callback(self._pre_set)
        node.add_on_set_parameters_callback(self._guarded(on_set))
        node.add_post_set_parameters_callback(self._post_set)

    # ------------------------------------------------------------------ what the parsers read
    def values(self) -> dict:
        """The given parameters (name → value): what the node parses. The schema's defaults are
        the parsers' own."""
        with self._lock:
            out = {}
            for name in self._given:
                if self._node.has_parameter(name):
                    value = self._node.get_parameter(name).value
                    if value is not None:
                        out[name] = value
            return out

    def after(self, params) -> dict:
        """:meth:`values` with the change ``params`` (rclpy ``Parameter`` s; ``NOT_SET`` deletes)."""
        flat = self.values()
        for p in params:
            if p.type_ == Parameter.Type.NOT_SET:
                flat.pop(p.name, None)
            else:
                flat[p.name] = p.value
        return flat

    # ------------------------------------------------------------------ rclpy callbacks
    @contextlib.contextmanager
    def _declaring(self):
        self._local.busy = True
        try:
            yield
        finally:
            self._local.busy = False

    def _busy(self) -> bool:
        return getattr(self._local, "busy", False)

    def _guarded(self, on_set):
        def on_set_parameters(params):
            if self._busy():                     # a default declared here: nothing to validate
                return SetParametersResult(successful=True)
            return on_set(params)
        return on_set_parameters

    def _pre_set(self, params):
        try:
            wanted = self._schema().expand(self.after(params))
            return [_coerced(p, wanted[p.name]) if p.name in wanted else p for p in params]
        except Exception:  # noqa: BLE001 - the set callback reports what is wrong with the values
            return list(params)

    def _post_set(self, params) -> None:
        if self._busy():
            return
        with self._lock:
            for p in params:
                self._described.pop(p.name, None)
                if p.type_ == Parameter.Type.NOT_SET:
                    self._given.discard(p.name)
                else:
                    self._given.add(p.name)
                    self._defaulted.discard(p.name)
            try:
                with self._declaring():
                    self._sync()
            except Exception as exc:  # noqa: BLE001 - the change is made; never an exception into rclpy
                self._node.get_logger().error(f"declaring the parameters of the new values failed: {exc}")

    # ------------------------------------------------------------------ declarations
    def _sync(self) -> None:
        """Declare (or describe) every parameter that applies to the given values; undeclare the
        defaults that no longer apply."""
        schema = self._schema()
        top = schema.top
        wanted = schema.expand(self.values())
        for name, field in wanted.items():
            try:
                if name in self._given:
                    if self._node.has_parameter(name) and self._described.get(name) != field:
                        self._describe(name, field, name in top)
                elif not self._node.has_parameter(name) and self._declarable(field, name in top):
                    self._declare(name, field, name in top)
            except (ParameterException, ValueError, TypeError) as exc:   # a name rclpy refuses: say so, go on
                self._node.get_logger().warning(f"parameter '{name}' not declared: {exc}")
        for name in sorted(self._defaulted - set(wanted)):
            if self._node.has_parameter(name):
                self._node.undeclare_parameter(name)
            self._defaulted.discard(name)
            self._described.pop(name, None)

    @staticmethod
    def _declarable(field: Field, static: bool) -> bool:
        """A default can be declared: not required, and (dynamically typed) not an empty array,
        which has no ROS type."""
        return not field.required and (static or not (field.type.endswith("_array") and not field.default))

    def _declare(self, name: str, field: Field, static: bool) -> None:
        d, kind = descriptor(name, field, static), _ROS_TYPES[field.type]
        # ignore_override: the value the set callback validated and planned with is the schema's default,
        # not a start-up value of a parameter deleted since (a sensor dropped and brought back)
        if static:                                      # typed, so that an empty list is a string array
            self._node.declare_parameter(name, kind, d, ignore_override=True)
            self._node.set_parameters([Parameter(name, kind, _ros_value(field, field.default))])
        else:
            self._node.declare_parameter(name, _ros_value(field, field.default), d, ignore_override=True)
        self._defaulted.add(name)
        self._described[name] = field

    def _describe(self, name: str, field: Field, static: bool) -> None:
        """Give a given parameter the schema's descriptor, its value converted to the field's type
        (an integer given for a double). A value the schema refuses is left as given: configure
        names it."""
        try:
            value = field.value(name, self._node.get_parameter(name).value)
        except (ConfigError, ModelError):
            return
        kind = _ROS_TYPES[field.type]
        typed = Parameter(name, kind, _ros_value(field, value))
        self._node.set_descriptor(name, descriptor(name, field, static), typed.get_parameter_value())
        if self._node.get_parameter(name).type_ != kind:
            self._node.set_parameters([typed])
        self._described[name] = field
