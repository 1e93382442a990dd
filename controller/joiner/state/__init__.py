"""ClusterState: what the controllers know about nodes, NodeClaims and pods."""
