"""Aggregates that reserve their hosts: for projects, for images, for
flavors. A host in no such aggregate passes all three.

AggregateMultiTenancyIsolation
    Metadata keys starting with ``filter_tenant_id`` (``filter_tenant_id``,
    ``filter_tenant_id2``, ...) hold comma-separated project ids; if the
    host's aggregates have any, the request's project must be one of them.
AggregateImagePropertiesIsolation
    For each metadata key of the host's aggregates (with
    ``[filter_scheduler] aggregate_image_properties_isolation_namespace``
    set, only keys starting with namespace + separator) that names one of
    nova 34's image properties (``ImageMetaProps``; any other key is
    skipped, as nova skips it), an image that has that property must have
    one of the key's comma-separated values (compared as strings). Images
    without the property (or with it false, 0 or empty) pass. An image
    property under its legacy name (``architecture``, ``vm_mode``,
    ``hypervisor_type``, ``vmware_adaptertype`` for the disk bus and SCSI
    model, ...) counts as the current one, as nova reads it; the
    architectures, hypervisor type, VM mode, SCSI and VIF models and OS
    type are canonicalized as nova's ``ImageMetaProps`` does (``amd64`` is
    ``x86_64``, ``xapi`` is ``xen``, ``hv`` is ``hvm``, ``VirtualE1000``
    is ``e1000``, ``Windows`` is ``windows``), and its integer and boolean
    properties typed as it types them (``hw_cpu_cores`` ``04`` is ``4``,
    ``os_require_quiesce`` ``yes`` is ``True`` and ``no`` is false).
AggregateTypeAffinityFilter
    ``instance_type`` metadata holds comma-separated flavor names; if the
    host's aggregates have any, the flavor's name must be one of them.
"""
from scheduler.filters.image_meta import NOVA_IMAGE_PROPERTIES
from scheduler.filters.image_meta import nova_image_properties
from scheduler.filters.image_properties import canonical_properties
from scheduler.filters.utils import PASS_ALL
from scheduler.filters.utils import RequestFilter
from scheduler.filters.utils import aggregate_metadata
from scheduler.filters.utils import aggregate_values

TENANT_PREFIX = "filter_tenant_id"
TYPE_KEY = "instance_type"


class AggregateMultiTenancyIsolation(RequestFilter):
    reason = "in an aggregate reserved for other projects"
    run_filter_once_per_request = True

    def prepare(self, spec):
        return spec.project_id

    def passes(self, host, project_id) -> bool:
        allowed = False   # no tenant key seen yet
        for agg in host.aggregates:
            for key, value in agg.metadata.items():
                if key.startswith(TENANT_PREFIX):
                    if project_id in {v.strip() for v in value.split(",")}:
                        return True
                    allowed = True
        return not allowed

    def explain(self, spec) -> str:
        return f"{self.reason} (project {spec.project_id})"


class AggregateImagePropertiesIsolation(RequestFilter):
    reason = "in an aggregate that excludes the image's properties"
    run_filter_once_per_request = True
    run_on_rebuild = True

    def prepare(self, spec):
        props = (spec.image or {}).get("properties") or {}
        if not props:
            return PASS_ALL
        fs = self.conf.filter_scheduler
        namespace = fs.aggregate_image_properties_isolation_namespace
        prefix = (namespace + fs.aggregate_image_properties_isolation_separator
                  if namespace else None)
        return canonical_properties(nova_image_properties(props)), prefix

    def passes(self, host, prepared) -> bool:
        if not host.aggregates:
            return True
        props, prefix = prepared
        for key, options in aggregate_metadata(host).items():
            if prefix is not None and not key.startswith(prefix):
                continue
            if key not in NOVA_IMAGE_PROPERTIES:
                continue
            prop = props.get(key)
            if prop and str(prop) not in options:
                return False
        return True


class AggregateTypeAffinityFilter(RequestFilter):
    reason = "in an aggregate reserved for other flavors"
    run_filter_once_per_request = True

    def prepare(self, spec):
        return spec.flavor.name

    def passes(self, host, flavor_name) -> bool:
        values = aggregate_values(host, TYPE_KEY)
        if not values:
            return True
        return any(flavor_name in {v.strip() for v in value.split(",")}
                   for value in values)

    def explain(self, spec) -> str:
        return f"{self.reason} (flavor {spec.flavor.name})"
