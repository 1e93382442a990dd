"""CapacityBuffer schema (autoscaling.x-k8s.io/v1beta1): upstream's CRD (the one Karpenter
ships), field for field and rule for rule, with its messages."""

from __future__ import annotations

from joiner.api import capacitybuffer as cb
from joiner.api.schema import Rule, Schema, array, integer, map_of, obj, quantity, string

# metav1.Condition's patterns, as every CRD with standard conditions has them.
CONDITION_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
CONDITION_TYPE = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)


def _name_ref(description: str) -> Schema:
    return obj(
        description,
        {"name": string("The name of the PodTemplate.", min_length=1)},
        required=("name",),
    )


def _scalable_ref() -> Schema:
    return obj(
        "A workload with a scale subresource whose pod template shapes one chunk "
        "(apps Deployment, ReplicaSet or StatefulSet).",
        {
            "apiGroup": string("The workload's API group; empty for the core group."),
            "kind": string("The workload's kind.", min_length=1),
            "name": string("The workload's name, in the buffer's namespace.", min_length=1),
        },
        required=("kind", "name"),
    )


def capacitybuffer_spec() -> Schema:
    return obj(
        "What spare capacity to keep: the shape of one chunk and how many chunks.",
        {
            "podTemplateRef": _name_ref(
                "A PodTemplate in the buffer's namespace: one chunk is one such pod. "
                "Exactly one of podTemplateRef and scalableRef."
            ),
            "scalableRef": _scalable_ref(),
            "replicas": integer("How many chunks.", minimum=0, format="int32"),
            "percentage": integer(
                "How many chunks, as a percentage of the scalableRef's replicas, rounded up "
                "(at least 1). With replicas too, the smaller of the two.",
                minimum=0,
                format="int32",
            ),
            "limits": map_of(
                quantity(),
                "A cap on the chunks' total requests (cpu, memory...); alone, as many "
                "chunks as fit under it.",
            ),
            "provisioningStrategy": string(
                f"How the buffer is used; Joiner holds {cb.ACTIVE_CAPACITY} buffers.",
                default=cb.ACTIVE_CAPACITY,
            ),
        },
        rules=(
            Rule(
                "If podTemplateRef is set, replicas or limits must also be set",
                lambda spec: "podTemplateRef" not in spec or "replicas" in spec or "limits" in spec,
                cel="!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",
            ),
            Rule(
                "You must define either PodTemplateRef or ScalableRef, but not both",
                lambda spec: not ("podTemplateRef" in spec and "scalableRef" in spec),
                cel="!(has(self.podTemplateRef) && has(self.scalableRef))",
            ),
        ),
    )


def _condition() -> Schema:
    return obj(
        "A status condition.",
        {
            "type": string(
                max_length=316,
                pattern=CONDITION_TYPE,
                hint="expected a CamelCase type like Ready, optionally prefixed example.com/",
            ),
            "status": string(enum=("True", "False", "Unknown")),
            "reason": string(
                min_length=1,
                max_length=1024,
                pattern=CONDITION_REASON,
                hint="expected a CamelCase reason like LimitReached",
            ),
            "message": string(max_length=32768),
            "lastTransitionTime": string(format="date-time"),
            "observedGeneration": integer(minimum=0, format="int64"),
        },
        required=("lastTransitionTime", "message", "reason", "status", "type"),
    )


def capacitybuffer_status() -> Schema:
    return obj(
        "What Joiner resolved and holds.",
        {
            "conditions": array(_condition(), "ReadyForProvisioning and Provisioning."),
            "podTemplateGeneration": integer(
                "The generation of the PodTemplate the chunks were shaped from.", format="int64"
            ),
            "podTemplateRef": _name_ref("The PodTemplate the chunks were shaped from."),
            "provisioningStrategy": string("The strategy in effect."),
            "replicas": integer("How many chunks the buffer resolved to.", format="int32"),
        },
    )
