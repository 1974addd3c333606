"""``kuberay-operator crds``: the CRDs generated from the API models, printed or written."""

from __future__ import annotations

import sys

import yaml

from controllers.api.crdgen import generate_crds, write_crds

__all__ = ["print_or_write_crds"]


def print_or_write_crds(out_dir: str | None) -> int:
    if out_dir:
        write_crds(out_dir)
        return 0
    crds = generate_crds()
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: the CRDs are large
    sys.stdout.write(yaml.dump_all(list(crds.values()), Dumper=dumper, sort_keys=False))
    return 0
