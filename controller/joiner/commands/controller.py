"""``joiner controller``: run the controller in a cluster (the container's entry point).

Settings come from the environment (listed by ``--help``); a bad or missing setting
exits with status 2 and one line naming the variable. SIGTERM and SIGINT stop it
gracefully: the leader-election Lease is released so the other replica takes over
at once.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import socket
import sys
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path

from joiner.clock import RealClock
from joiner.cloudprovider.types import CloudProvider
from joiner.controllers.nodeclass import Resolver
from joiner.kube.http import SERVICE_ACCOUNT_DIR, ClusterConfig, ConfigError, HttpKube
from joiner.serve import (
    CloudFactory,
    LeaderElection,
    NodeClassLookup,
    StartupError,
    configure_logging,
    run_controller,
)
from joiner.settings import Settings, SettingsError, settings_help

EXIT_BAD_SETTINGS = 2
DEFAULT_NAMESPACE = "kube-system"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "controller",
        help="run the node autoscaler controller (in the cluster)",
        description="Run the Joiner controller: watch pending pods, launch and remove EC2 "
        "capacity for your NodePools. Configured by environment variables; two replicas "
        "share the work through a leader-election Lease. Metrics on METRICS_PORT "
        "(/metrics), probes on HEALTH_PROBE_PORT (/healthz, /readyz), both on "
        "BIND_ADDRESS; JSON logs on stderr. "
        "See docs/operations.md.",
        epilog="environment variables:\n" + settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig to use outside a cluster (default: in-cluster service account, "
        "else $KUBECONFIG or ~/.kube/config)",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context to use")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        settings = Settings.from_env(os.environ)
    except SettingsError as err:
        return _fail(str(err))
    configure_logging(settings.log_level)
    try:
        kube = controller_client(_cluster_config(args), settings)
        cloud_factory = aws_cloud_factory(settings)
    except (StartupError, ConfigError) as err:
        return _fail(str(err))
    stop = threading.Event()
    _stop_on_signals(stop)
    election = leader_election(settings, os.environ)
    try:
        return run_controller(settings, kube, cloud_factory, stop, election)
    except StartupError as err:
        return _fail(str(err))


def _fail(message: str) -> int:
    print(f"joiner controller: {message}", file=sys.stderr)
    return EXIT_BAD_SETTINGS


def _cluster_config(args: argparse.Namespace) -> ClusterConfig:
    if args.kubeconfig or args.context:
        return ClusterConfig.from_kubeconfig(args.kubeconfig, args.context)
    return ClusterConfig.auto()


LIST_PAGE_SIZE = 500  # client-go's reflector reads lists 500 items a request


def controller_client(config: ClusterConfig, settings: Settings) -> HttpKube:
    """The controller's API client: paced by KUBE_CLIENT_QPS and KUBE_CLIENT_BURST, lists
    read in pages, without the managedFields the controller never reads (half of a pod's
    memory in its cache, as Karpenter's cache strips them too), and with the objects'
    repeated strings shared (half of what is left)."""
    return HttpKube(
        config,
        qps=settings.kube_client_qps,
        burst=settings.kube_client_burst,
        managed_fields=False,
        shared_strings=True,
        page_size=LIST_PAGE_SIZE,
    )


def _stop_on_signals(stop: threading.Event) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())


def leader_election(
    settings: Settings, env: Mapping[str, str], sa_dir: Path = SERVICE_ACCOUNT_DIR
) -> LeaderElection | None:
    """The Lease's namespace: the setting, else the pod's own namespace, else kube-system.
    The identity is unique per process, as client-go makes it."""
    if settings.disable_leader_election:
        return None
    namespace = settings.leader_election_namespace or _own_namespace(env, sa_dir)
    identity = f"{env.get('HOSTNAME') or socket.gethostname()}_{uuid.uuid4()}"
    return LeaderElection(
        namespace=namespace, identity=identity, name=settings.leader_election_name
    )


def _own_namespace(env: Mapping[str, str], sa_dir: Path) -> str:
    if env.get("SYSTEM_NAMESPACE"):
        return env["SYSTEM_NAMESPACE"]
    try:
        return (sa_dir / "namespace").read_text().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


def aws_cloud_factory(settings: Settings, endpoint_url: str | None = None) -> CloudFactory:
    """Check AWS is reachable and the cluster exists (naming what is missing), and return
    the factory of the AWS provider."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from joiner.cloudprovider.aws.clients import AWSClients
    from joiner.cloudprovider.aws.cluster import ClusterInfo
    from joiner.cloudprovider.aws.provider import AWSCloudProvider

    session = boto3.Session()
    region = settings.aws_region or session.region_name
    if not region:
        raise StartupError("AWS_REGION is not set and the AWS SDK found no region")
    clients = AWSClients.create(
        region, session, endpoint_url=endpoint_url, with_pricing=not settings.isolated_vpc
    )
    try:
        eks = session.client("eks", region_name=region, endpoint_url=endpoint_url)
        cluster = ClusterInfo.from_eks(eks, settings.cluster_name)
    except (BotoCoreError, ClientError) as err:
        raise StartupError(
            f"CLUSTER_NAME: cannot describe EKS cluster {settings.cluster_name!r}: {err}"
        ) from None
    if settings.cluster_endpoint:
        cluster = dataclasses.replace(cluster, endpoint=settings.cluster_endpoint)

    def build(nodeclasses: NodeClassLookup) -> tuple[CloudProvider, Resolver]:
        cloud = AWSCloudProvider(
            clients,
            RealClock(),
            cluster,
            region,
            nodeclasses,
            vm_memory_overhead_percent=settings.vm_memory_overhead_percent,
            reserved_enis=settings.reserved_enis,
            isolated_vpc=settings.isolated_vpc,
        )
        return cloud, cloud.resolve_nodeclass

    return build
