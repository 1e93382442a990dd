"""Helpers every component shares: argument checks and small Output utilities."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

TYPE_PREFIX = "joiner:index:"


class ArgumentError(pulumi.RunError):
    """Bad component input. A RunError, so `pulumi preview` prints the message alone
    (no stack trace) and names the argument."""


def require(component: str, name: str, args: Mapping[str, Any], key: str) -> Any:
    """The value of a required argument, or an ArgumentError naming it."""
    value = args.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ArgumentError(f"{component} {name!r}: argument '{key}' is required")
    return value


def check_choice(component: str, name: str, key: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ArgumentError(
            f"{component} {name!r}: argument '{key}' must be one of {', '.join(choices)}"
            f" (got {value!r})"
        )
    return value


def json_output(build: Callable[..., dict], *inputs: pulumi.Input[Any]) -> pulumi.Output[str]:
    """``build(*resolved inputs)`` serialised to JSON, once every input is known."""
    return pulumi.Output.all(*inputs).apply(lambda values: json.dumps(build(*values)))


def after(dependency: pulumi.Output[Any], value: pulumi.Input[Any]) -> pulumi.Output[Any]:
    """``value``, carrying a dependency on whatever produced ``dependency`` (used to make
    resources that only need a name wait until the named thing exists)."""
    return pulumi.Output.all(dependency, value).apply(lambda pair: pair[1])


def declared_outputs(component: pulumi.ComponentResource) -> dict[str, Any]:
    """The component's outputs by name: the attributes its class annotates, the same
    annotations the provider schema is inferred from, so the two cannot drift apart."""
    names = [name for name in inspect.get_annotations(type(component)) if name[0] != "_"]
    return {name: getattr(component, name) for name in names}


def child_opts(parent: pulumi.Resource, **extra: Any) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=parent, **extra)


def invoke_opts(parent: pulumi.Resource) -> pulumi.InvokeOptions:
    return pulumi.InvokeOptions(parent=parent)


def custom_resource(
    resource_name: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> k8s.apiextensions.CustomResource:
    """A Kubernetes custom object (NodePool, ServiceMonitor, ...) from its manifest dict."""
    fields = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind", "metadata")}
    return k8s.apiextensions.CustomResource(
        resource_name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        opts=opts,
        **fields,
    )
