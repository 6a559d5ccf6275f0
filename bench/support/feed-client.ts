/**
 * The change feed as a client reads it over HTTP, for the benches that time it: read to the
 * watermark (`GET /v1/events`, page by page), and follow an SSE stream (`GET /v1/events/stream`).
 */

/** An event as the routes send it (the fields the benches look at). */
export interface WireEvent {
  id: string;
  type: string;
  source: string;
  target: string;
}

/** The cursor at the watermark: every settled event after `after` read through, page by page. */
export async function feedWatermark(
  url: string,
  auth: Record<string, string>,
  after: string | null,
): Promise<string> {
  let cursor = after;
  for (;;) {
    const q = cursor ? `&after=${encodeURIComponent(cursor)}` : '';
    const page = (await (await fetch(`${url}/v1/events?limit=1000${q}`, { headers: auth })).json()) as {
      items: unknown[];
      next_cursor: string;
    };
    if (page.items.length === 0) return page.next_cursor;
    cursor = page.next_cursor;
  }
}

/**
 * Follows `GET /v1/events/stream` after `after`, calling `onEvent` with each event as its frame
 * arrives, until `stop`; `done` settles when the stream ends (rejects on a failure before `stop`).
 */
export function streamEvents(
  url: string,
  auth: Record<string, string>,
  after: string,
  onEvent: (e: WireEvent) => void,
): { done: Promise<void>; stop: () => void } {
  const abort = new AbortController();
  const done = (async () => {
    const res = await fetch(`${url}/v1/events/stream?after=${encodeURIComponent(after)}`, {
      headers: { ...auth, accept: 'text/event-stream' },
    });
    // Not fetch's own `signal`: with it, undici stopped delivering this stream's chunks after the
    // first one here (the server's writes then waited on backpressure); cancel the reader instead.
    if (!res.ok || !res.body) throw new Error(`SSE answered ${res.status}`);
    const decoder = new TextDecoder();
    let buffer = '';
    const reader = res.body.getReader();
    abort.signal.addEventListener('abort', () => void reader.cancel().catch(() => undefined));
    for (;;) {
      const { done: ended, value: chunk } = await reader.read();
      if (ended) break;
      buffer += decoder.decode(chunk, { stream: true });
      let end = buffer.indexOf('\n\n');
      while (end >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = frame.split('\n').find((l) => l.startsWith('data:'));
        if (data) onEvent(JSON.parse(data.slice(5)) as WireEvent);
        end = buffer.indexOf('\n\n');
      }
    }
  })().catch((e: unknown) => {
    if (!abort.signal.aborted) throw e;
  });
  return { done, stop: () => abort.abort() };
}
