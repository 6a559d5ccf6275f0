/**
 * `jobs relay --brokers HOST:PORT --topic NAME`: the settled change feed to a Kafka topic
 * (`relay.ts`), until SIGTERM/SIGINT (or, with `--until-idle`, until the feed has nothing more),
 * with a progress line every 5 s. Its arguments are parsed by `relay-args.ts`.
 */
import type { EventFeed } from '../../graph/contracts.js';
import type { RelayCursorStore } from '../../ports/relay-cursor-store.js';
import type { JobCommand } from '../job-command.js';
import { parseRelayArgs, type RelayArgs } from '../relay-args.js';
import type { OpenJobRuntime } from '../runtime.js';

export const relayCommand = {
  name: 'relay',
  help: 'relay the settled change feed to Kafka until stopped (--brokers HOST:PORT --topic graph-events [--name relay] [--batch N])',
  async run(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
    const args = parseRelayArgs(argv);
    const rt = await openRuntime();
    try {
      await relayWith(args, { feed: rt.feed, cursors: rt.store });
    } finally {
      await rt.close();
    }
  },
} satisfies JobCommand;

/** The relay command on a given feed and cursor store (the CLI's, or a test's). */
export async function relayWith(
  args: RelayArgs,
  deps: { feed: EventFeed; cursors: Pick<RelayCursorStore, 'getRelayCursor' | 'putRelayCursor'> },
): Promise<{ events: number; cursor: string | null }> {
  const { kafkaSink, runRelay } = await import('../relay.js');
  const sink = kafkaSink({
    brokers: args.brokers,
    topic: args.topic,
    clientId: `flocklist-${args.name}`,
  });
  const abort = new AbortController();
  const stop = (signal: string) => {
    if (abort.signal.aborted) return;
    console.log(`[relay] ${signal}: stopping after the page in flight`);
    abort.abort();
  };
  const onTerm = () => stop('SIGTERM');
  const onInt = () => stop('SIGINT');
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
  console.log(
    `[relay] ${args.name}: feed → ${args.brokers.join(',')} topic ${args.topic}, from ${(await deps.cursors.getRelayCursor(args.name)) ?? 'the oldest retained event'}`,
  );
  try {
    const r = await runRelay({
      feed: deps.feed,
      cursors: deps.cursors,
      sink,
      name: args.name,
      batch: args.batch,
      signal: abort.signal,
      untilIdle: args.untilIdle,
      onProgress: (p) =>
        console.log(
          `[relay] ${args.name}: ${p.events} events, ${Math.round(p.rate)}/s, lag ${p.lagSeconds === null ? '-' : `${p.lagSeconds.toFixed(1)} s`}, cursor ${p.cursor ?? '-'}`,
        ),
    });
    console.log(
      `[relay] ${args.name}: stopped after ${r.events} events in ${(r.elapsedMs / 1000).toFixed(1)} s`,
    );
    return r;
  } finally {
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
    await sink.close();
  }
}
