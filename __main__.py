"""The component provider behind PulumiPlugin.yaml: serves pulumi_joiner's components
(type tokens joiner:index:<Class>) to programs in any Pulumi language; the schema is
inferred from the components' type annotations and docstrings."""

from joiner import __version__
from pulumi.provider.experimental import component_provider_host
from pulumi_joiner import COMPONENTS

if __name__ == "__main__":
    component_provider_host(components=COMPONENTS, name="joiner", version=__version__)
