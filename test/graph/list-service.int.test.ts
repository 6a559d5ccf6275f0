import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { testKeyspace } from '../support/cassandra.js';
import { describeListScenarios } from './list-scenarios.js';

// Page size 1 walks a 5,000-item prefix and page size 7 a 20,000-item prefix (then resumes the
// rest at 200): the full 200,000 pages of page size 1 would take the file past its CI budget.
// LIST_WALK_PREFIX1=200000 LIST_WALK_PREFIX7=200000 walks the whole list at both sizes (≈ 10 min).
// LIST_SIZE sets the main list's rows (default 200,000; CI's second runtime uses fewer).
const knob = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
describeListScenarios(
  'cassandra',
  async () => {
    const ks = await testKeyspace('list_service');
    return { store: new CassandraGraphStore(ks.client), teardown: () => ks.drop() };
  },
  {
    listSize: knob('LIST_SIZE', 200_000),
    prefix1: knob('LIST_WALK_PREFIX1', 5_000),
    prefix7: knob('LIST_WALK_PREFIX7', 20_000),
    growthSize: 30_000,
    statsSize: 20_000,
    scanLimit: 1000,
  },
);
