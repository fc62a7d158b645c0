"""The linearizability models under their first import path (docs/contracts.md section 6);
they live in :mod:`spark_validation.checks.linearizable.models`."""

from spark_validation.checks.linearizable.models import (  # noqa: F401
    MODELS,
    NIL_READS,
    UNKNOWN,
    AppendLogModel,
    Call,
    CasRegisterModel,
    KVModel,
    Model,
    ModelError,
    MultiRegisterModel,
    RegisterModel,
    SetModel,
    get_model,
    with_nil_reads,
)
from spark_validation.checks.linearizable.models import __all__  # noqa: F401
