/**
 * The arguments of `jobs relay`, parsed and checked before anything connects: the relay's child
 * process in the tests (`test/relay/relay-child.ts`) parses its command line with the same
 * function, so both accept the same options.
 */
import { parseArgs } from 'node:util';

export const RELAY_USAGE =
  'usage: jobs relay --brokers HOST:PORT[,HOST:PORT] --topic NAME [--name relay] [--batch 1..1000] [--until-idle]';

/** `jobs relay`'s options, parsed. */
export interface RelayArgs {
  /** Kafka bootstrap brokers, `host:port` each. */
  brokers: string[];
  /** The topic the events go to. */
  topic: string;
  /** The relay's name: its cursor's key and its Kafka client id's suffix. Default `relay`. */
  name: string;
  /** Events per feed page, 1..1000. Default 500. */
  batch: number;
  /** Stop once the feed has nothing more, instead of at SIGTERM/SIGINT. */
  untilIdle: boolean;
}

/** Parses `jobs relay`'s options; exits 2 with the usage line when they are missing or malformed. */
export function parseRelayArgs(argv: string[]): RelayArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      brokers: { type: 'string' },
      topic: { type: 'string' },
      name: { type: 'string', default: 'relay' },
      batch: { type: 'string', default: '500' },
      'until-idle': { type: 'boolean', default: false },
    },
  });
  const batch = Number(values.batch);
  if (
    !values.brokers ||
    !/^[^\s,:]+:\d+(,[^\s,:]+:\d+)*$/.test(values.brokers) ||
    !values.topic ||
    !/^[\w.-]{1,249}$/.test(values.topic) ||
    !/^[\w.-]{1,100}$/.test(values.name) ||
    !Number.isInteger(batch) ||
    batch < 1 ||
    batch > 1000
  ) {
    console.error(RELAY_USAGE);
    process.exit(2);
  }
  return {
    brokers: values.brokers.split(','),
    topic: values.topic,
    name: values.name,
    batch,
    untilIdle: values['until-idle'],
  };
}
