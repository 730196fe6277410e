"""Where the cue ball runs after contact, without simulating: the shot's points (cue ball, object ball, potting
point, ghost ball), the tangent line by the 90-degree rule mirrored off the cushions into a pocket, and the cue
ball's path to its first cushion by closed-form physics (a strike with the players' top spin, sliding then
rolling). Geometry and physics a tool could show a player; analysis/choice_rules.py reads them."""

from __future__ import annotations

import functools

PATH_CUSHIONS = 3  # cushions the tangent line is followed off
# The spin a player's departure line assumes, as rolling speed over ball speed at contact: none (stun), a rolling
# ball's top spin (follow), as much back spin (draw).
SPIN_LINES = {"stun": 0.0, "follow": 1.0, "draw": -1.0}


def shot_points(s, ball: str, pocket: str) -> tuple[tuple[float, float], ...]:
    """(cue ball, object ball, potting point, ghost ball) of the shot the report shows for (ball, pocket)."""
    from poolbench_data.core.geometry import aim_point, ghost_ball

    pos = {b.id: (b.x, b.y) for b in s.balls}
    point = aim_point(*pos[ball], pocket, "potting-point")
    return pos["cue"], pos[ball], point, ghost_ball(*pos[ball], *point)


def tangent_path(s, ball: str, pocket: str, cushions: int = PATH_CUSHIONS) -> int | None:
    """How many cushions the cue ball's line after contact by the 90-degree rule (the tangent line, no spin,
    reflected off each cushion as a mirror) meets before it runs into a pocket, up to `cushions`; None when it
    meets none, or for a straight shot. Geometry a tool could show, no simulation."""
    import math

    (cx, cy), (tx, ty), (px, py), (x, y) = shot_points(s, ball, pocket)
    span = math.dist((px, py), (tx, ty))
    u = ((px - tx) / span, (py - ty) / span)  # the object ball's line
    along = (x - cx) * u[0] + (y - cy) * u[1]
    t = (x - cx - along * u[0], y - cy - along * u[1])  # the cue ball's travel less its part along that line
    norm = math.hypot(*t)
    if norm < 1e-9:
        return None  # a straight shot: the cue ball stops (stun) or follows, no tangent line
    return path_pocket(x, y, t[0] / norm, t[1] / norm, cushions)


def departure_lines(s, ball: str, pocket: str) -> dict[str, float | None]:
    """The direction (degrees, the aim's convention) the cue ball travels after contact on the shot the report
    shows for (ball, pocket), once its spin has taken, for each of SPIN_LINES: the rule a player uses without
    simulating. At contact the cue ball keeps the part of its velocity across the line of centres (t, the tangent
    line: stun's direction) and its spin; sliding friction then turns a spin of k times the speed along the aim
    (d) into (5/7) t + (2/7) k d, the rule behind the 30-degree rule (a half-ball hit with follow leaves ~34
    degrees off the aim). None where the cue ball has no direction: a stun on a straight shot stops it."""
    import math

    (cx, cy), (tx, ty), _, (gx, gy) = shot_points(s, ball, pocket)
    dist, span = math.dist((cx, cy), (gx, gy)), math.dist((gx, gy), (tx, ty))
    d = ((gx - cx) / dist, (gy - cy) / dist)
    n = ((tx - gx) / span, (ty - gy) / span)  # the line of centres at contact
    along = d[0] * n[0] + d[1] * n[1]
    t = (d[0] - along * n[0], d[1] - along * n[1])
    out = {}
    for name, k in SPIN_LINES.items():
        vx, vy = 5 / 7 * t[0] + 2 / 7 * k * d[0], 5 / 7 * t[1] + 2 / 7 * k * d[1]
        out[name] = None if math.hypot(vx, vy) < 1e-6 else math.degrees(math.atan2(vy, vx)) % 360.0
    return out


def path_pocket(x: float, y: float, dx: float, dy: float, cushions: int) -> int | None:
    """A ball's straight path from (x, y) along the unit (dx, dy), mirrored off the cushions: how many cushions it
    meets before it runs into a pocket, up to `cushions`; else None."""
    import math

    from poolbench_data.core.table import geometry

    geo = geometry()
    r = geo.ball_radius

    def to_edge(start: float, step: float, size: float) -> float:  # where the ball's centre meets the cushion
        return (size - r - start) / step if step > 0 else (r - start) / step if step < 0 else math.inf

    for k in range(cushions + 1):
        # A pocket is on the way where the line enters its circle before the cushion, or within a pocket's width
        # past it (a corner pocket's mouth lies beyond both cushions).
        along_x, along_y = to_edge(x, dx, geo.width), to_edge(y, dy, geo.length)
        edge = min(along_x, along_y)
        for p in geo.pockets:
            ahead, off = (p.x - x) * dx + (p.y - y) * dy, abs((p.x - x) * dy - (p.y - y) * dx)
            if ahead > 0 and off < p.radius and ahead - math.sqrt(p.radius ** 2 - off ** 2) <= edge + 2 * p.radius:
                return k
        x, y = x + edge * dx, y + edge * dy
        dx, dy = (-dx if along_x <= along_y else dx), (-dy if along_y <= along_x else dy)
    return None


@functools.cache
def strike() -> tuple[float, float]:
    """(ball speed / cue speed, forward spin R * omega / ball speed) of a strike on the cue ball's vertical centre
    line at the players' top spin: pooltool's instantaneous-point formula with its default cue and ball."""
    from pooltool.objects.ball.params import BallParams
    from pooltool.objects.cue.datatypes import CueSpecs

    from poolbench_data.core.vocab import DEFAULT_B

    ball, cue = BallParams(), CueSpecs()
    return 2 / (1 + ball.m / cue.M + 5 / 2 * DEFAULT_B ** 2), 5 / 2 * DEFAULT_B  # I = 2/5 m R^2


def cue_path(s, ball: str, pocket: str, speed: float, step: float = 0.005) -> tuple:
    """Where the cue ball goes after potting `ball` in `pocket` at `speed`, by closed-form physics of the cue ball
    alone: struck with the players' top spin, it slides then rolls to the ghost ball; at contact it keeps its
    speed across the line of centres (and (1 - e) / 2 of the speed along it) and all its spin, then slides along
    a parabola (friction against the slip, which turns the spin towards the motion) until it rolls. Followed to
    its first cushion: ("pocket", id), ("cushion", x, y), ("stops", x, y) or ("jaw", x, y). Other balls are
    ignored; after a cushion, pooltool's cushion model (compliant, spin-dependent) decides, which this does not
    reproduce."""
    import math

    from pooltool.objects.ball.params import BallParams

    from poolbench_data.core.table import geometry

    prm, geo = BallParams(), geometry()
    r, slide, roll = geo.ball_radius, prm.u_s * prm.g, prm.u_r * prm.g
    (cx, cy), (tx, ty), _, (gx, gy) = shot_points(s, ball, pocket)
    dist = math.dist((cx, cy), (gx, gy))
    ratio, spin = strike()
    v = ratio * speed
    w = spin * v  # the speed the spin alone would roll at
    slid_t = (v - w) / (3.5 * slide)  # the slip v - w closes at 7/2 of the friction's deceleration
    slid_d = v * slid_t - slide * slid_t ** 2 / 2
    if dist <= slid_d:
        t = (v - math.sqrt(v * v - 2 * slide * dist)) / slide
        v, w = v - slide * t, w + 2.5 * slide * t
    else:
        v = w = math.sqrt(max((v - slide * slid_t) ** 2 - 2 * roll * (dist - slid_d), 0.0))
    if v == 0.0 or dist == 0.0:
        return ("stops", cx, cy)
    dx, dy = (gx - cx) / dist, (gy - cy) / dist
    nx, ny = (tx - gx) / geo.ball_diameter, (ty - gy) / geo.ball_diameter
    along = v * (dx * nx + dy * ny) * (1 + prm.e_b) / 2  # the normal speed the object ball takes
    x, y, vx, vy, wx, wy = gx, gy, v * dx - along * nx, v * dy - along * ny, w * dx, w * dy
    rails = [(x1, min(y1, y2), max(y1, y2)) for _, x1, y1, x2, y2 in geo.linear_cushions if x1 == x2]
    ends = [(y1, min(x1, x2), max(x1, x2)) for _, x1, y1, x2, y2 in geo.linear_cushions if y1 == y2]
    for _ in range(10_000):
        sp = math.hypot(vx, vy)
        if sp < 0.01:
            return ("stops", x, y)
        ux, uy = vx - wx, vy - wy
        slip = math.hypot(ux, uy)
        dt = step / sp
        if slip > 1e-4:
            dt = min(dt, slip / (3.5 * slide))
            ax, ay = -slide * ux / slip, -slide * uy / slip
            x, y = x + vx * dt + ax * dt * dt / 2, y + vy * dt + ay * dt * dt / 2
            vx, vy, wx, wy = vx + ax * dt, vy + ay * dt, wx - 2.5 * ax * dt, wy - 2.5 * ay * dt
        else:
            x, y = x + vx * dt, y + vy * dt
            f = max(sp - roll * dt, 0.0) / sp
            vx, vy = wx, wy = vx * f, vy * f
        for p in geo.pockets:
            if math.dist((x, y), (p.x, p.y)) < p.radius:
                return ("pocket", p.id)
        # a rail where it has a straight cushion; between the jaws the ball runs on into the pocket's mouth
        if any(lo <= y <= hi and (x < at + r if at == 0 else x > at - r) for at, lo, hi in rails) or any(
                lo <= x <= hi and (y < at + r if at == 0 else y > at - r) for at, lo, hi in ends):
            return ("cushion", x, y)
        if not (-3 * r < x < geo.width + 3 * r and -3 * r < y < geo.length + 3 * r):
            return ("jaw", x, y)  # past the mouth without falling: a jaw turned it, out of this model
    return ("stops", x, y)
