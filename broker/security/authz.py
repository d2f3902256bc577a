"""Authorization checks, one function per API family (filled in below)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable

if TYPE_CHECKING:
    from ..dispatch import RequestContext

CHECKS: dict[int, Callable[..., Awaitable[Any]]] = {}


async def authorized(ctx: "RequestContext", request: Any, handler: Callable[..., Awaitable[Any]]) -> Any:
    check = CHECKS.get(ctx.api_key)
    if check is None:
        return await handler(ctx, request)
    return await check(ctx, request, handler)
