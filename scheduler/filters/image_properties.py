"""ImagePropertiesFilter: the host must be able to run the image.

The image properties read (today's name first, then nova's legacy name,
from :data:`scheduler.filters.image_meta.NOVA_LEGACY_IMAGE_PROPERTIES`):

- ``hw_architecture`` / ``architecture``,
- ``img_hv_type`` / ``hypervisor_type``,
- ``hw_vm_mode`` / ``vm_mode``,
- ``img_hv_requested_version`` / ``hypervisor_version_requires``, a version
  predicate such as ``>=6.0`` or ``>=4.0, <5.0``.

Values are canonicalized as nova does (lower case; ``amd64`` is ``x86_64``,
``i386``..``i586`` and ``x86_32`` are ``i686``, ``xapi`` is ``xen``, VM
modes ``pv`` is ``xen``, ``hv`` and ``baremetal`` are ``hvm``). If the image
sets none of the first three (and ``[filter_scheduler]
image_properties_default_architecture`` is unset) every host passes the
triple check; otherwise the host must advertise a ``supported_instances``
triple ``(arch, hv_type, vm_mode)`` matching every value the image sets.
A version predicate must hold for the host's ``hypervisor_version`` (an int,
1000 per component: 6001002 is 6.1.2); a host reporting version 0 (unknown)
is not judged on it. ``hw_maxphysaddr_bits`` (nova 34) must be at most the
host's ``cpu_info.maxphysaddr.bits``; a host that does not report it is not
judged on it, as in nova.

Two deliberate differences from nova: a value is compared with its own
position in the triple (nova accepted it anywhere in the triple, so an
image asking for vm_mode ``xen`` matched a host offering hypervisor ``xen``
with vm_mode ``hvm``), and the version predicate and
``hw_maxphysaddr_bits`` are checked even when the image sets no
architecture, hypervisor type or VM mode (nova silently ignored them then).
A malformed predicate or bit count is an ``InvalidRequest`` naming the
property, where nova raised an internal error.
"""
from __future__ import annotations

import re

from scheduler import exception
from scheduler.filters.image_meta import NOVA_BOOLEAN_IMAGE_PROPERTIES
from scheduler.filters.image_meta import NOVA_INTEGER_IMAGE_PROPERTIES
from scheduler.filters.image_meta import with_legacy_names
from scheduler.filters.utils import PASS_ALL
from scheduler.filters.utils import RequestFilter

_ARCH_ALIASES = {"amd64": "x86_64", "i386": "i686", "i486": "i686",
                 "i586": "i686", "x86_32": "i686", "x86_32p": "i686"}
_HV_ALIASES = {"xapi": "xen"}
_VM_MODE_ALIASES = {"pv": "xen", "hv": "hvm", "baremetal": "hvm"}
#: nova 34's SCSIModel and VIFModel fields: the legacy (VMware) spellings.
_SCSI_MODEL_ALIASES = {"lsilogicsas": "lsisas1068", "paravirtual": "vmpvscsi"}
_VIF_MODEL_ALIASES = {
    "virtuale1000": "e1000", "virtuale1000e": "e1000e",
    "virtualpcnet32": "pcnet", "virtualsriovethernetcard": "sriov",
    "virtualvmxnet": "vmxnet", "virtualvmxnet3": "vmxnet3"}

_PROPERTIES = tuple(with_legacy_names(name) for name in (
    "hw_architecture", "img_hv_type", "hw_vm_mode"))
_VERSION_PROPERTIES = with_legacy_names("img_hv_requested_version")
MAXPHYSADDR_BITS = "hw_maxphysaddr_bits"
_COMPARISON = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*(\d+(?:\.\d+)*)\s*$")
_OPERATORS = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    ">=": lambda a, b: a >= b, ">": lambda a, b: a > b}


def _canonical(value, aliases: dict[str, str]) -> str | None:
    if value is None or value == "":
        return None
    value = str(value).lower()
    return aliases.get(value, value)


def canonicalize_arch(value) -> str | None:
    return _canonical(value, _ARCH_ALIASES)


def canonicalize_hv_type(value) -> str | None:
    return _canonical(value, _HV_ALIASES)


def canonicalize_vm_mode(value) -> str | None:
    return _canonical(value, _VM_MODE_ALIASES)


#: The image properties whose nova 34 ``ImageMetaProps`` field rewrites a
#: value to its canonical spelling, and how.
_NOVA_CANONICAL = {
    "hw_architecture": canonicalize_arch,
    "hw_emulation_architecture": canonicalize_arch,   # an Architecture too
    "img_hv_type": canonicalize_hv_type,
    "hw_vm_mode": canonicalize_vm_mode,
    "hw_scsi_model": lambda value: _canonical(value, _SCSI_MODEL_ALIASES),
    "hw_vif_model": lambda value: _canonical(value, _VIF_MODEL_ALIASES),
    "os_type": lambda value: _canonical(value, {}),   # OSType: lower case
}
#: oslo's ``bool_from_string`` words for True (nova's FlexibleBooleanField).
_TRUE_WORDS = frozenset(("1", "t", "true", "on", "y", "yes"))


def _nova_typed(name: str, value):
    """``value`` as nova's integer or boolean ImageMetaProps field holds
    it; a value that is no integer stays as it is."""
    if name in NOVA_BOOLEAN_IMAGE_PROPERTIES and not isinstance(value, bool):
        return str(value).strip().lower() in _TRUE_WORDS
    if name in NOVA_INTEGER_IMAGE_PROPERTIES:
        try:   # True is 1, as nova's int() makes it
            return int(value)
        except (TypeError, ValueError):
            return value
    return value


def canonical_properties(props: dict) -> dict:
    """``props`` (today's names) with the values nova's ImageMetaProps
    fields canonicalize (architectures, hypervisor type, VM mode, SCSI and
    VIF models, OS type) spelled as nova holds them: ``AMD64`` is
    ``x86_64``, ``VirtualE1000`` is ``e1000``, ``Windows`` is
    ``windows``; and its integer and boolean fields typed as nova types
    them: ``'04'`` is 4, ``'yes'`` is True."""
    out = {name: _nova_typed(name, value) for name, value in props.items()}
    for name, canonical in _NOVA_CANONICAL.items():
        value = canonical(props.get(name))
        if value is not None:
            out[name] = value
    return out


def version_tuple(version: int) -> tuple[int, ...]:
    """nova's integer hypervisor version as components: 6001002 ->
    (6, 1, 2) (1000 per component)."""
    parts: list[int] = []
    while version > 0:
        version, part = divmod(version, 1000)
        parts.insert(0, part)
    return tuple(parts)


def parse_predicate(text: str, field: str):
    """A predicate on version tuples from ``">=6.0, <7"``.

    :raises InvalidRequest: naming ``field`` if ``text`` is not a
        comma-separated list of comparisons.
    """
    comparisons = []
    for part in str(text).split(","):
        found = _COMPARISON.match(part)
        if not found:
            raise exception.InvalidRequest(
                f"{field}: {str(text)[:100]!r} is not a version predicate "
                f"like '>=6.0' or '>=4.0, <5.0'")
        op, version = found.groups()
        comparisons.append((_OPERATORS[op],
                            tuple(int(p) for p in version.split("."))))

    def satisfied_by(version: tuple[int, ...]) -> bool:
        for compare, wanted in comparisons:
            width = max(len(version), len(wanted))
            have = version + (0,) * (width - len(version))
            want = wanted + (0,) * (width - len(wanted))
            if not compare(have, want):
                return False
        return True
    return satisfied_by


def maxphysaddr_bits(props: dict) -> int | None:
    """The image's ``hw_maxphysaddr_bits``, None if unset.

    :raises InvalidRequest: naming the property if it is not a positive
        integer.
    """
    value = props.get(MAXPHYSADDR_BITS)
    if value is None or value == "":
        return None
    try:
        bits = int(str(value))
    except ValueError:
        bits = 0
    if bits < 1 or isinstance(value, bool):
        raise exception.InvalidRequest(
            f"spec.image.properties.{MAXPHYSADDR_BITS}: {str(value)[:40]!r} "
            f"is not a positive integer")
    return bits


def _host_maxphysaddr_bits(host) -> int | None:
    found = (host.cpu_info.get("maxphysaddr") or {})
    bits = found.get("bits") if isinstance(found, dict) else None
    try:
        return int(bits) if bits else None
    except (TypeError, ValueError):
        return None


def _get(props: dict, names: tuple[str, ...]):
    for name in names:
        value = props.get(name)
        if value is not None and value != "":
            return name, value
    return None, None


class ImagePropertiesFilter(RequestFilter):
    run_on_rebuild = True
    reason = "cannot run the image (architecture, hypervisor or VM mode)"
    run_filter_once_per_request = True

    def prepare(self, spec):
        props = (spec.image or {}).get("properties") or {}
        wanted = []
        for names in _PROPERTIES:
            wanted.append(_NOVA_CANONICAL[names[0]](_get(props, names)[1]))
        if wanted[0] is None:
            wanted[0] = canonicalize_arch(
                self.conf.filter_scheduler
                .image_properties_default_architecture)
        name, text = _get(props, _VERSION_PROPERTIES)
        predicate = None
        if name is not None:
            predicate = parse_predicate(
                text, f"spec.image.properties.{name}")
        bits = maxphysaddr_bits(props)
        if not any(wanted) and predicate is None and bits is None:
            return PASS_ALL
        return (tuple(wanted) if any(wanted) else None), predicate, bits

    def passes(self, host, prepared) -> bool:
        wanted, predicate, bits = prepared
        if wanted is not None:
            arch, hv_type, vm_mode = wanted
            for h_arch, h_hv_type, h_vm_mode in host.supported_instances:
                if ((arch is None or arch == h_arch)
                        and (hv_type is None or hv_type == h_hv_type)
                        and (vm_mode is None or vm_mode == h_vm_mode)):
                    break
            else:
                return False
        if bits is not None:
            # nova: a host that does not report its width is not judged
            host_bits = _host_maxphysaddr_bits(host)
            if host_bits is not None and host_bits < bits:
                return False
        if predicate is not None and host.hypervisor_version:
            return predicate(version_tuple(host.hypervisor_version))
        return True

    def explain(self, spec) -> str:
        props = (spec.image or {}).get("properties") or {}
        asked = []
        for names in (*_PROPERTIES, _VERSION_PROPERTIES,
                      (MAXPHYSADDR_BITS,)):
            name, value = _get(props, names)
            if name is not None:
                asked.append(f"{name}={str(value)[:40]}")
        default = self.conf.filter_scheduler \
            .image_properties_default_architecture
        if default and _get(props, _PROPERTIES[0])[0] is None:
            asked.insert(0, f"default architecture={default}")
        return f"{self.reason}: {', '.join(asked)}" if asked else self.reason
