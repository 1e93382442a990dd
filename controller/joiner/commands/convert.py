"""``joiner convert FILE... | - | --from-cluster``: old Karpenter manifests to v1.

Writes every input object to standard output as YAML (the old kinds replaced by their
v1 objects, other objects as they were) and the report to standard error: one line per
field of each old object, ``Kind/name: field.path: converted -> Kind/name field``,
``added`` (a v1 field written for what the old object left to a default) or
``no equivalent: what to do``. ``--from-cluster`` reads the old kinds from the cluster
of the kubeconfig, ``--apply`` creates (or replaces) the v1 objects there. The mapping
is ``joiner.convert.fields`` (docs/convert.md). Exit status: 0 converted, 1 the cluster
refused or failed a call, 2 bad input (one line naming the file, object and field).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import yaml

from joiner import yamlio
from joiner.commands.validate import STDIN, objects_of, read_problem
from joiner.convert import Conversion, ConversionError, Options, convert_objects, is_old_kind
from joiner.convert.common import source_of
from joiner.kube.api import ApiError
from joiner.kube.http import ClusterConfig, ConfigError, HttpKube

BAD_INPUT, CLUSTER_FAILED = 2, 1


class InputError(Exception):
    """Input that cannot be read or converted; the message names the file and field."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "convert",
        help="convert v1alpha5 / v1beta1 Karpenter manifests to v1",
        description="Convert v1alpha5 Provisioner and AWSNodeTemplate, and v1beta1 "
        "NodePool, NodeClaim and EC2NodeClass manifests to v1 (see docs/convert.md). "
        "The v1 YAML goes to standard output, the report of every field to standard error.",
        epilog="exit status: 0 converted; 1 a call to the cluster failed; 2 bad input",
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help="YAML file, or - for stdin")
    parser.add_argument(
        "--from-cluster", action="store_true", help="read the old kinds from the cluster"
    )
    parser.add_argument(
        "--kubeconfig", metavar="PATH", help="kubeconfig (default $KUBECONFIG, ~/.kube/config)"
    )
    parser.add_argument(
        "--apply", action="store_true", help="create or replace the v1 objects in the cluster"
    )
    parser.add_argument(
        "--role",
        metavar="NAME",
        help="node IAM role of EC2NodeClasses whose old object names no instance profile "
        "(default: the placeholder $KARPENTER_NODE_ROLE)",
    )
    parser.add_argument(
        "--ignore-defaults",
        action="store_true",
        help="do not write the requirements v1alpha5 defaulted (os, arch, capacity type, "
        "instance category and generation)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if not args.files and not args.from_cluster:
        print("joiner convert: name a FILE, - for stdin, or --from-cluster", file=sys.stderr)
        return BAD_INPUT
    kube: HttpKube | None = None
    try:
        if args.from_cluster or args.apply:
            kube = HttpKube(ClusterConfig.from_kubeconfig(args.kubeconfig))
        labelled = _read_inputs(args.files, kube if args.from_cluster else None)
        result = _convert(labelled, Options(role=args.role, ignore_defaults=args.ignore_defaults))
        sys.stdout.write(to_yaml(result.objects))
        _report(result)
        if args.apply and kube is not None:
            for line in _apply(kube, result):
                print(line, file=sys.stderr)
    except (InputError, ConfigError) as error:
        print(f"joiner convert: {error}", file=sys.stderr)
        return BAD_INPUT
    except ApiError as error:
        print(f"joiner convert: cluster: {error}", file=sys.stderr)
        return CLUSTER_FAILED
    finally:
        if kube is not None:
            kube.close()
    return 0


def _read_inputs(files: list[str], kube: HttpKube | None) -> list[tuple[str, Any]]:
    """(where it came from, object) for every object of the files and the cluster."""
    from joiner.convert.cluster import read_old_objects

    labelled = [item for name in files for item in _read_file(name)]
    if kube is not None:
        labelled += [(kube.config.server, obj) for obj in read_old_objects(kube)]
    return labelled


def _read_file(name: str) -> list[tuple[str, Any]]:
    label = "<stdin>" if name == STDIN else name
    try:
        text = yamlio.read_text(sys.stdin.buffer if name == STDIN else name)
    except (OSError, UnicodeDecodeError, yamlio.InputTooLarge) as error:
        raise InputError(f"{label}: cannot read: {read_problem(error)}") from None
    labelled = []
    index = 0
    try:
        for index, document in enumerate(yamlio.load_all(text), start=1):
            for obj in objects_of(document):
                if not isinstance(obj, dict):
                    raise InputError(f"{label}: document {index}: expected an object")
                labelled.append((label, obj))
    except yamlio.YAMLInputError as error:
        raise InputError(f"{label}: document {index + 1}: {error}") from None
    return labelled


def _convert(labelled: list[tuple[str, Any]], options: Options) -> Conversion:
    try:
        return convert_objects([obj for _, obj in labelled], options)
    except ConversionError as error:
        where = next(
            (
                label
                for label, obj in labelled
                if is_old_kind(obj) and source_of(obj) == error.source
            ),
            "<input>",
        )
        raise InputError(f"{where}: {error}") from None


class _BlockDumper(yaml.SafeDumper):
    """Writes text of several lines (user data) as a ``|`` block, as people write it."""


def _represent_text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    # (PyYAML falls back to a quoted form for text a block cannot hold, like trailing spaces)
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_BlockDumper.add_representer(str, _represent_text)


def to_yaml(objects: list[Any]) -> str:
    """The objects as multi-document YAML, keys in their order."""
    if not objects:
        return ""
    return yaml.dump_all(objects, Dumper=_BlockDumper, sort_keys=False, explicit_start=True)


def _report(result: Conversion) -> None:
    for note in result.notes:
        print(note, file=sys.stderr)
    print(f"converted {result.converted} old object(s)", file=sys.stderr)


def _apply(kube: HttpKube, result: Conversion) -> list[str]:
    from joiner.convert.cluster import apply_objects

    return apply_objects(kube, result.objects)
