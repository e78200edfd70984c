"""A mock Kafka cluster that real consumers join: :class:`MockCluster` (and ``kwire serve``).

A single node on asyncio, over kwire's codec and :class:`kwire.group.GroupCoordinator`; see docs/GROUP.md.
A pytest fixture is one line::

    @pytest.fixture
    def kafka():
        with MockCluster(topics={"orders": 12}) as cluster:
            yield cluster

This module only re-exports.
"""

from kwire.testing._cluster import MockCluster
from kwire.testing._config import KEYS as CONFIG_KEYS
from kwire.testing._faults import API_KEYS, api_key
from kwire.testing._serve import add_serve_parser, control, serve
from kwire.testing._server import CLUSTER_ID, MAX_FETCH_WAIT_MS, NODE_ID, ClusterServer, Limits, topic_id

__all__ = ["API_KEYS", "CLUSTER_ID", "CONFIG_KEYS", "MAX_FETCH_WAIT_MS", "NODE_ID", "ClusterServer", "Limits", "MockCluster",
           "add_serve_parser", "api_key", "control", "serve", "topic_id"]
