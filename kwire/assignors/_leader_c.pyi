from typing import Any, List, Optional, Tuple

import numpy as np

from ._leader_common import StickyUserDataColumns, SubscriptionColumns

def assignment_bytes(
    indptr: np.ndarray, topic: np.ndarray, partition: np.ndarray, name_offsets: np.ndarray, name_blob: bytes, version: int
) -> List[bytes]: ...

def sync_frame(
    indptr: np.ndarray, topic: np.ndarray, partition: np.ndarray, name_offsets: np.ndarray, name_blob: bytes,
    version: int, member_ids: list, flexible: bool, head: bytes, tail: bytes
) -> Optional[bytes]: ...

def subscription_columns(metadata: List[bytes]) -> SubscriptionColumns: ...

def sticky_userdata_columns(user_data: List[Optional[bytes]], names: List[str]) -> StickyUserDataColumns: ...

def member_rows(members: list) -> Tuple[List[Any], List[Any], np.ndarray, List[bytes], List[int]]: ...
