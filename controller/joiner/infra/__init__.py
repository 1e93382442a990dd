"""Pure builders for the AWS documents Joiner's infrastructure needs (no Pulumi import, so
the controller image and the ``joiner`` command can use them too)."""
