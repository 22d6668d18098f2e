"""Followers (``AccelConfig.follow``, off by default): groups of new flows and of one graph that
miss the memo cache at the same boundary follow the first one (the rails of a rail-optimized
fabric carry the same traffic, so their groups form alike and evolve alike).

The first group that misses records its transient (the leader); each later group of the same
graph at that boundary (the memo key and an exact isomorphism, which maps its flows onto the
leader's), whose flows are all new and have as many bytes left as the leader's, is frozen as its
follower, with no transient of its own. A follower mirrors its leader: once the leader is
steady and frozen, the follower's wake is the leader's; it wakes when the leader wakes or its
group changes (a join or a leave), when a flow joins the follower, or before any flow of either
could have sent all but its last RTT at line rate. It then advances by its leader flows' bytes
sent since the lookup and takes their pacing rates (:func:`.replay.progress`). Only sampled,
replicated values decide, so every rank decides alike. A follower still ends a fraction of a
packet off its leader (its pipeline is the one it was frozen with), which breaks the lockstep
of identical rails (measured in bench/RESULTS.md).
"""

from __future__ import annotations

from .config import BPS_PER_BYTE_PS
from .fastforward import wake_by
from .memo import flow_match
from .replay import Pending


class Followers:
    """The leaders that missed at the last lookup boundary (by memo key) and each leader's
    followers (replicated state). Counters: ``follows`` (groups frozen as followers),
    ``steady`` (of them, those whose leader froze steady while they followed)."""

    def __init__(self, on: bool):
        self.on = on
        self.at_ps = -1
        self.by_key: dict[str, list] = {}  # memo key -> leaders that missed at at_ps
        self.of: dict[int, tuple] = {}  # leader gid -> (leader, [followers])
        self.follows = 0
        self.steady = 0

    def follow(self, wh, g, t: int) -> bool:
        """Group ``g`` of Wormhole ``wh`` missed at ``t`` (``g.memo_base`` set): freeze it as a
        follower of a leader of the same graph that missed at ``t`` (True), or make it a leader.
        Only groups of new flows follow (the state of a flow under way is in the key only
        coarsely), each with as many bytes left as its leader flow."""
        if not self.on:
            return False
        if t != self.at_ps:
            self.at_ps, self.by_key = t, {}
        key, graph, order = g.memo_key
        if key is None:
            key = wh.memo.key_of(graph)
        flows = wh.flows
        if not all(wh.is_new(f, g) for f in g.flows):
            return False
        for lead in self.by_key.get(key, ()):
            if lead.memo_base is None or wh.groups.get(lead.gid) is not lead:
                continue
            m = flow_match(graph, lead.memo_key[1])
            if m is None:
                continue
            lead_order = lead.memo_key[2]
            pend = {}
            for i, j in m.items():
                fs, lf = flows[order[i]], flows[lead_order[j]]
                una0, inflight0 = lead.memo_base[lf.fid]
                if fs.size - fs.samples[-1].sent_bytes < lf.size - una0 - inflight0:
                    break
                pend[fs.fid] = (lf, una0 + inflight0)
            else:
                # awake before any flow of either could have sent all but its last RTT at line rate
                both = [flows[f] for f in g.flows] + [flows[f] for f in lead.flows]
                end = min(wake_by(fs, t, fs.una(), fs.line_rate_bps / BPS_PER_BYTE_PS, wh.cfg.margin_rtts)
                          for fs in both)
                wake = wh._wake_at(g, t, end)
                if wake - t < wh.min_skip_ps:
                    break
                g.memo_base = None
                wh._freeze(g, t, wake, {}, Pending(lead, pend))
                self.of.setdefault(lead.gid, (lead, []))[1].append(g)
                self.follows += 1
                return True
            break
        self.by_key.setdefault(key, []).append(g)
        return False

    def _followers(self, wh, lead) -> list:
        """The followers still following ``lead`` (by group id), dropped from the table."""
        item = self.of.pop(lead.gid, None)
        if item is None or item[0] is not lead:
            return []
        return [g for g in item[1] if g.frozen is not None and isinstance(g.frozen.memo, Pending)
                and g.frozen.memo.leader is lead and wh.groups.get(g.gid) is g]

    def froze(self, wh, lead, t: int) -> None:
        """Group ``lead`` was checked steady at ``t``: if it leads followers, frozen, they wake when
        it wakes (or before, at a known flow start on their ports); not frozen, they wake now."""
        if lead.gid not in self.of:
            return
        if lead.frozen is None:
            for g in self._followers(wh, lead):
                wh._wake(g, t)
            return
        for g in self.of[lead.gid][1]:
            if g.frozen is not None and isinstance(g.frozen.memo, Pending) and g.frozen.memo.leader is lead:
                g.frozen.wake_ps = wh._wake_at(g, t, lead.frozen.wake_ps)
                self.steady += 1

    def lead_woke(self, wh, lead, t: int, fz, advance: dict) -> None:
        """Group ``lead`` woke at ``t`` from the freeze ``fz`` with ``advance``: if it leads
        followers, they wake with its flows' positions."""
        if lead.gid not in self.of:
            return
        for g in self._followers(wh, lead):
            pend = g.frozen.memo
            pend.at = {}
            for fid, (lf, _) in pend.lead.items():
                f = lf.fid
                rate = lf.samples[-1].rate_bps if lf.samples else lf.line_rate_bps
                pend.at[fid] = (fz.una0[f] + fz.inflight0[f] + max(0, advance.get(f, 0)), rate)
            wh._wake(g, t)

    def orphans(self, wh, t: int) -> None:
        """At boundary ``t``, after the flow table's changes: the followers of leaders whose
        group changed wake with their leader flows' last positions."""
        if not self.of:
            return
        for gid in sorted(self.of):
            lead, _ = self.of[gid]
            if wh.groups.get(gid) is not lead:
                for g in self._followers(wh, lead):
                    wh._wake(g, t)
