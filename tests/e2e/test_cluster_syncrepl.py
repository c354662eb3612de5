"""A Larch cluster as one syncrepl provider (docs/cluster.md, "Consumers"): a slapd consumer
following one node keeps up across a failover of the leader, and a cookie taken on one
node gets only the changes since it from another.

Every process is signalled by its PID only.
"""

import pytest

from test_cluster import BASE, Cluster, add_on_leader
from test_syncrepl_provider import SlapdConsumer, assert_converges, follow

pytestmark = pytest.mark.larch_only("Larch's cluster")


def test_a_slapd_consumer_and_a_cookie_follow_the_cluster_across_a_failover(request):
    cluster = Cluster(request.config.getoption("--larch-bin"))
    consumer = None
    try:
        leader = cluster.start_with_people()
        follower = next(s for s in cluster.nodes.values() if s is not leader)
        consumer = SlapdConsumer(follower)
        consumer.start()
        for i in range(20):
            assert add_on_leader(cluster, i) == 0
        assert_converges(follower, consumer)
        first, _ = follow(follower, f"ou=people,{BASE}")
        assert len(first.entries) == 21
        cookie = first.cookie

        # The leader dies; a new one takes the writes; the consumer, on its follower,
        # keeps up.
        leader.kill9()
        for i in range(20, 30):
            assert add_on_leader(cluster, i) == 0
        assert_converges(follower, consumer)

        # The cookie the follower gave, presented to another node: the ten new entries
        # only, no full refresh.
        other = next(s for s in cluster.nodes.values() if s.alive() and s is not follower)
        second, _ = follow(other, f"ou=people,{BASE}", cookie=cookie)
        names = sorted(dn.split(",")[0].lower() for dn, _ in second.entries.values())
        assert names == sorted(f"cn=p{i}" for i in range(20, 30)), names
        leader.start()
    finally:
        if consumer is not None:
            consumer.close()
        cluster.close()
