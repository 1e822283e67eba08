"""IsolatedHostsFilter: keep isolated images and isolated hosts together.

``[filter_scheduler] isolated_images`` (image ids) may run only on
``isolated_hosts`` (host names). With
``restrict_isolated_hosts_to_isolated_images`` (True) isolated hosts also
run nothing else: a host passes iff (image isolated) == (host isolated).
With it False, a non-isolated image may go anywhere, an isolated one only to
an isolated host. With no isolated images, a restricted isolated host takes
no request at all, as in nova.
"""
from scheduler.filters.utils import PASS_ALL
from scheduler.filters.utils import RequestFilter


class IsolatedHostsFilter(RequestFilter):
    run_on_rebuild = True
    reason = "image and host isolation do not match"
    run_filter_once_per_request = True

    def _image_isolated(self, spec) -> bool:
        images = self.conf.filter_scheduler.isolated_images
        return bool(images) and (spec.image or {}).get("id") in images

    def prepare(self, spec):
        fs = self.conf.filter_scheduler
        restrict = fs.restrict_isolated_hosts_to_isolated_images
        image_isolated = self._image_isolated(spec)
        if not image_isolated and not restrict:
            return PASS_ALL
        return frozenset(fs.isolated_hosts), image_isolated, restrict

    def passes(self, host, prepared) -> bool:
        hosts, image_isolated, restrict = prepared
        host_isolated = host.host in hosts
        if restrict:
            return image_isolated == host_isolated
        return host_isolated   # only reached for an isolated image

    def explain(self, spec) -> str:
        if self._image_isolated(spec):
            return f"{self.reason}: the image may run only on isolated hosts"
        return f"{self.reason}: isolated hosts run only isolated images"
