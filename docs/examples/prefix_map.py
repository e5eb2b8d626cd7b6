#!/usr/bin/python3
"""Which KV-cache chunks does each Larder node hold? A router's map, kept from the nodes'
keyspace notifications (docs/routing.md explains the design).

    /usr/bin/python3 docs/examples/prefix_map.py 10.0.0.1:6379 10.0.0.2:6379

Each node needs `notify-keyspace-events E$gxeG` (set, del, expired, evicted and the
per-generation summary). NodeView subscribes first and scans second, so no change between the
two is lost; it then applies every event in order. Events are at most once: after a reconnection
the view scans again. A generation summary says that many keys left at once: the view has
already dropped them one by one if it hears `evicted`; otherwise (a node that sends only G, to
spare its subscribers) it re-checks its keys with EXISTS. Which of the two a node does, the view
asks the node (CONFIG GET notify-keyspace-events) unless told.

Needs redis-py (Debian's python3-redis)."""
import sys
import time

import redis

EVENTS = ("set", "del", "expired", "evicted", "rename_from", "rename_to", "evicted-generation")


def sends_evicted_events(client):
    """Whether the node publishes an `evicted` event per key (class `e`, or `A` which holds
    it). False when the node does not say (CONFIG refused): the view then re-checks, which
    costs round trips but never keeps a key the node dropped."""
    try:
        flags = client.config_get("notify-keyspace-events").get("notify-keyspace-events")
    except redis.ResponseError:
        return False
    return flags is not None and ("e" in flags or "A" in flags)


class NodeView:
    """The keys one node holds, as its events report them."""

    def __init__(self, client, verify_on_generation=None):
        """verify_on_generation: re-check the keys at each generation summary; None (the
        default) asks the node: yes if it sends no per-key `evicted` events."""
        self.client = client
        if verify_on_generation is None:
            verify_on_generation = not sends_evicted_events(client)
        self.verify_on_generation = verify_on_generation
        self.keys = set()
        self.pubsub = client.pubsub()
        self.pubsub.subscribe(*["__keyevent@0__:" + e for e in EVENTS])
        for _ in EVENTS:  # subscribed for sure before the scan starts
            confirmation = self.pubsub.get_message(timeout=10)
            if confirmation is None or confirmation["type"] != "subscribe":
                raise redis.ConnectionError("no subscription confirmed: %r" % confirmation)
        self.resync()

    def resync(self):
        """Rebuilds the view from a full SCAN (at start and after a reconnection)."""
        self.keys = set(self.client.scan_iter(count=1000))

    def apply(self, message):
        if message["type"] != "message":
            return
        event = message["channel"].split(b":", 1)[1].decode()
        key = message["data"]
        if event in ("set", "rename_to"):
            self.keys.add(key)
        elif event == "evicted-generation":
            if self.verify_on_generation:
                self.keys = {k for k in self.keys if self.client.exists(k)}
        else:  # del, expired, evicted, rename_from
            self.keys.discard(key)

    def drain(self, timeout=0.0):
        """Applies every event received, waiting up to `timeout` seconds for the first;
        returns how many messages it took."""
        n = 0
        message = self.pubsub.get_message(timeout=timeout)
        while message is not None:
            self.apply(message)
            n += 1
            message = self.pubsub.get_message(timeout=0.0)
        return n

    def cached_prefix(self, chunk_keys):
        """How many leading chunks of a request this node holds, by the view."""
        n = 0
        for key in chunk_keys:
            if (key if isinstance(key, bytes) else key.encode()) not in self.keys:
                break
            n += 1
        return n

    def confirmed_prefix(self, chunk_keys):
        """The same, asked of the node itself: one LARDER.PREFIX round trip."""
        return self.client.execute_command("LARDER.PREFIX", *chunk_keys)


def best_node(views, chunk_keys):
    """The node whose view holds the longest prefix of `chunk_keys`, confirmed by the node
    (a view can lag its node by the events in flight); (None, 0) when no node holds any."""
    ranked = sorted(views.items(), key=lambda kv: kv[1].cached_prefix(chunk_keys), reverse=True)
    for name, view in ranked:
        if view.cached_prefix(chunk_keys) == 0:
            break
        confirmed = view.confirmed_prefix(chunk_keys)
        if confirmed > 0:
            return name, confirmed
    return None, 0


def main(addresses):
    views = {}
    for addr in addresses:
        host, _, port = addr.rpartition(":")
        views[addr] = NodeView(redis.Redis(host=host or "127.0.0.1", port=int(port)))
    while True:
        for addr, view in views.items():
            try:
                view.drain(timeout=0.1)
            except redis.ConnectionError:
                time.sleep(1)
                views[addr] = NodeView(view.client)  # rescans, and asks the node again
                continue
            print("%s: %d keys" % (addr, len(view.keys)))
        time.sleep(1)


if __name__ == "__main__":
    main(sys.argv[1:] or ["127.0.0.1:6379"])
