"""A journal of the writes a test sent to larder-server, and the values they carry, so that any
value read back can be checked byte for byte and classified after a crash.

Every value names its key and a sequence number in a short header, followed by bytes derived
from (key, seq): a value that is not exactly one the test wrote to that key is detectable."""
import random
import threading

# Value sizes: small ones stay inline in SST files, >= 64 KiB go to blob files.
SIZES = (100, 3000, 40 << 10, 70 << 10, 200 << 10)


def make_value(key, seq, size):
    head = b"%s|%d|%d|" % (key.encode(), seq, size)
    body = random.Random("%s|%d" % (key, seq)).randbytes(max(0, size - len(head)))
    return head + body


def parse_seq(key, value):
    """The seq of `value` if it is exactly make_value(key, seq, size) for some seq, else None."""
    parts = value.split(b"|", 3)
    if len(parts) != 4 or parts[0] != key.encode():
        return None
    try:
        seq, size = int(parts[1]), int(parts[2])
    except ValueError:
        return None
    return seq if value == make_value(key, seq, size) else None


class KeyState:
    __slots__ = ("acked", "sent", "pending")

    def __init__(self):
        self.acked = None    # seq of the last acknowledged SET; None = absent (never set / deleted)
        self.sent = set()    # every seq ever sent for this key (acknowledged or not)
        self.pending = None  # ("set", seq) or ("del",) sent but not answered when the server died


class Journal:
    """Per-key state. Each key is written by one worker at a time, so the acknowledged state of
    a key is exact: a read while the server lives must return exactly it."""

    def __init__(self, keys):
        self.keys = {k: KeyState() for k in keys}
        self._seq = 0
        self._lock = threading.Lock()
        self.acked_writes = 0

    def next_seq(self):
        with self._lock:
            self._seq += 1
            return self._seq

    def classify(self, key, value):
        """After a restart: 'ok', 'lost' (acknowledged value gone), 'stale' (an older version
        came back), 'resurrected' (an acknowledged DEL undone) or 'wrong' (bytes never written)."""
        st = self.keys[key]
        pending_seq = st.pending[1] if st.pending and st.pending[0] == "set" else None
        if value is None:
            if st.acked is None or st.pending == ("del",):
                return "ok"
            return "lost"
        seq = parse_seq(key, value)
        if seq is None or seq not in st.sent:
            return "wrong"
        if seq == st.acked or seq == pending_seq:
            return "ok"
        if st.acked is None:
            return "resurrected"
        return "stale" if seq < st.acked else "wrong"

    def rebase(self, key, value):
        """The state read after a restart becomes the new acknowledged state."""
        st = self.keys[key]
        st.acked = None if value is None else parse_seq(key, value)
        st.pending = None
