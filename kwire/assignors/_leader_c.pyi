from typing import Any, List, Tuple

import numpy as np

from ._leader_common import SubscriptionColumns

def assignment_bytes(
    indptr: np.ndarray, topic: np.ndarray, partition: np.ndarray, name_offsets: np.ndarray, name_blob: bytes, version: int
) -> List[bytes]: ...

def subscription_columns(metadata: List[bytes]) -> SubscriptionColumns: ...

def member_rows(members: list) -> Tuple[List[Any], List[Any], np.ndarray, List[bytes], List[int]]: ...
