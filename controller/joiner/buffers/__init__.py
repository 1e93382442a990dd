"""CapacityBuffers (autoscaling.x-k8s.io/v1beta1): spare capacity kept ahead of demand.

``resolution`` turns a buffer into its chunk shape and count; ``chunks`` makes the virtual
pods the scheduler places for them (never created in the cluster); ``holding`` places
them on the cluster's nodes after the real pods; ``provisioning`` says how many of a
buffer's chunks are held and why not the rest; ``controller`` writes each buffer's status
and asks the provisioner for capacity when a chunk is not held; ``signals`` shows the
holding in metrics and Events.
"""
