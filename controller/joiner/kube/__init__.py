"""The Kubernetes port: one protocol, a memory adapter and an http adapter."""
