"""The simulator: the real controller on a virtual clock."""
