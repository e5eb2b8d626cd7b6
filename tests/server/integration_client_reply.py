"""CLIENT REPLY ON|OFF|SKIP beside Redis 7: each sequence is sent as one pipeline to both servers
(RESP2 and RESP3), and what comes back must be byte for byte the same: the replies OFF drops,
the one reply SKIP drops, errors dropped like any reply, RESET and ON turning replies back on,
and Pub/Sub confirmations and messages, which are sent whatever the mode."""
import re
import time
import unittest

from server_harness import BesideRedisCase, encode, wait_for

__all__ = ["ClientReplyAsRedisTest"]  # imported by integration_test

BIG = "x" * (300 << 10)  # a value sent as several pieces
SEQUENCES = {
    "OFF drops until ON": [["CLIENT", "REPLY", "OFF"], ["SET", "a", "1"], ["GET", "a"],
                           ["CLIENT", "REPLY", "ON"], ["GET", "a"]],
    "SKIP drops one reply": [["CLIENT", "REPLY", "SKIP"], ["GET", "a"], ["GET", "a"]],
    "a skipped SKIP skips the next": [["CLIENT", "REPLY", "SKIP"], ["CLIENT", "REPLY", "SKIP"],
                                      ["GET", "a"], ["GET", "a"]],
    "SKIP while OFF changes nothing": [["CLIENT", "REPLY", "OFF"], ["CLIENT", "REPLY", "SKIP"],
                                       ["PING"], ["CLIENT", "REPLY", "ON"], ["PING"]],
    "ON ends a SKIP and answers": [["CLIENT", "REPLY", "SKIP"], ["CLIENT", "REPLY", "ON"],
                                   ["PING"]],
    "errors": [["CLIENT", "REPLY", "BOGUS"], ["CLIENT", "REPLY"], ["CLIENT", "REPLY", "on", "x"]],
    "dropped errors": [["CLIENT", "REPLY", "OFF"], ["NOSUCH"], ["GET"], ["INCR", "a", "b"],
                       ["CLIENT", "REPLY", "ON", "extra"], ["CLIENT", "REPLY", "ON"]],
    "a skipped unknown command": [["CLIENT", "REPLY", "SKIP"], ["NOSUCH"], ["PING"]],
    "RESET answers after OFF": [["CLIENT", "REPLY", "OFF"], ["RESET"], ["PING"]],
    "RESET obeys a SKIP": [["CLIENT", "REPLY", "SKIP"], ["RESET"], ["PING"]],
    "HELLO while OFF still switches": [["CLIENT", "REPLY", "OFF"], ["HELLO", "3"],
                                       ["CLIENT", "REPLY", "ON"], ["GET", "nokey"]],
    "a skipped MULTI": [["CLIENT", "REPLY", "SKIP"], ["MULTI"], ["PING"], ["EXEC"]],
    "a whole transaction OFF": [["CLIENT", "REPLY", "OFF"], ["MULTI"], ["SET", "a", "2"],
                                ["GET", "a"], ["EXEC"], ["CLIENT", "REPLY", "ON"], ["GET", "a"]],
    "large values dropped": [["SET", "big", BIG], ["CLIENT", "REPLY", "SKIP"], ["GET", "big"],
                             ["CLIENT", "REPLY", "OFF"], ["MGET", "big", "big"],
                             ["CLIENT", "REPLY", "ON"], ["STRLEN", "big"]],
    "Pub/Sub confirmations are sent": [
        ["CLIENT", "REPLY", "OFF"], ["SUBSCRIBE", "ch"], ["PSUBSCRIBE", "p*"], ["PING"],
        ["UNSUBSCRIBE"], ["PUNSUBSCRIBE"], ["CLIENT", "REPLY", "ON"]],
    "a skipped SUBSCRIBE is confirmed": [["CLIENT", "REPLY", "SKIP"], ["SUBSCRIBE", "ch"],
                                         ["UNSUBSCRIBE", "ch"]],
}
END = "end-of-sequence"
END_REPLY = b"$%d\r\n%s\r\n" % (len(END), END.encode())


class ClientReplyAsRedisTest(BesideRedisCase):
    @staticmethod
    def received(server, commands, protocol):
        """The bytes one connection receives for `commands` sent as one pipeline, up to the
        reply to the ECHO sent after them (with replies turned back on)."""
        c = server.raw()
        try:
            c.call("HELLO", str(protocol))
            c.call("DEL", "a", "big")
            tail = [["CLIENT", "REPLY", "ON"], ["ECHO", END]]
            c.send(b"".join(encode(*cmd) for cmd in commands + tail))
            while not c.buf.endswith(END_REPLY):
                c._fill()
            return bytes(c.buf)
        finally:
            c.close()

    def test_replies_as_redis(self):
        for protocol in (2, 3):
            for name, commands in SEQUENCES.items():
                with self.subTest(sequence=name, protocol=protocol):
                    larder, redis = (self.received(s, commands, protocol)
                                     for s in (self.larder, self.redis))
                    self.assertEqual(larder, redis)

    def test_off_really_drops(self):
        # Pinned apart from the comparison, which a server answering everything would fail
        # only through Redis.
        got = self.received(self.larder, SEQUENCES["OFF drops until ON"], 2)
        self.assertEqual(got, b"+OK\r\n$1\r\n1\r\n+OK\r\n" + END_REPLY)

    def test_inside_a_transaction_each_answers_ok_and_holds_after_exec(self):
        # Redis changes the mode mid-EXEC and leaves EXEC's array short of replies; Larder
        # answers OK in the array and applies the mode from the next command on.
        commands = [["MULTI"], ["CLIENT", "REPLY", "OFF"], ["SET", "a", "3"], ["EXEC"],
                    ["GET", "a"]]
        got = self.received(self.larder, commands, 2)
        self.assertEqual(got, b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n+OK\r\n+OK\r\n"
                         + END_REPLY)


    @staticmethod
    def monitored(server):
        """The MONITOR lines a monitoring connection receives while it turns its replies OFF,
        SKIPs one command and ON again, and another client runs commands; stamps and
        addresses dropped."""
        m, o = server.raw(), server.raw()

        def reply_less(*command):  # then waits until the server ran it
            m.send(encode(*command))
            words = command[:2] if command[0] == "CLIENT" else command[:1]
            name = b"cmd=" + "|".join(words).lower().encode()
            wait_for(lambda: name + b" " in o.call("CLIENT", "LIST", "ID", m_id),
                     timeout=10, interval=0.01)
            time.sleep(0.05)  # from its start (listed) to its end

        lines = []
        try:
            m_id = int(m.call("CLIENT", "ID")[1:-2])
            m.call("MONITOR")
            o.call("SET", "a", "1")
            reply_less("CLIENT", "REPLY", "OFF")
            o.call("SET", "a", "2")
            m.send(encode("CLIENT", "REPLY", "ON"))
            while not lines or lines[-1] != b"+OK\r\n":  # ON ran
                lines.append(re.sub(rb"^\+[0-9.]+ \[0 [^\]]*\] ", b"+", m.reply()))
            o.call("SET", "a", "3")
            reply_less("CLIENT", "REPLY", "SKIP")
            o.call("SET", "a", "4")  # dropped: the SKIP waits for the monitor's next command
            reply_less("PING")  # the skipped command
            o.call("ECHO", END)
            while not lines[-1].endswith(b'"%s"\r\n' % END.encode()):
                lines.append(re.sub(rb"^\+[0-9.]+ \[0 [^\]]*\] ", b"+", m.reply()))
            return lines
        finally:
            m.close()
            o.close()

    def test_monitor_lines_obey_the_reply_mode(self):
        larder = self.monitored(self.larder)
        self.assertEqual(larder, self.monitored(self.redis))
        self.assertIn(b'+"SET" "a" "3"\r\n', larder)
        self.assertNotIn(b'+"SET" "a" "2"\r\n', larder)


if __name__ == "__main__":
    unittest.main()
