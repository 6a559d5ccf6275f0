import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { testKeyspace } from '../support/cassandra.js';
import { knob } from '../support/soak.js';
import { describeListScenarios } from './list-scenarios.js';

// A 20,000-row list; page size 1 walks a 2,000-item prefix and page size 7 an 8,000-item prefix
// (then resumes the rest at 200); the growth walks a 10,000-row list and the N = 64 read 5,000
// rows. `SOAK=1`: 200,000 rows, prefixes of 5,000 and 20,000, growth 30,000, N = 64 20,000.
// LIST_WALK_PREFIX1=200000 LIST_WALK_PREFIX7=200000 walks the whole list at both sizes (≈ 10 min).
describeListScenarios(
  'cassandra',
  async () => {
    const ks = await testKeyspace('list_service');
    return { store: new CassandraGraphStore(ks.client), teardown: () => ks.drop() };
  },
  {
    listSize: knob('LIST_SIZE', 200_000, 20_000),
    prefix1: knob('LIST_WALK_PREFIX1', 5_000, 2_000),
    prefix7: knob('LIST_WALK_PREFIX7', 20_000, 8_000),
    statsSize: knob('LIST_STATS_SIZE', 20_000, 5_000),
    scanLimit: 1000,
  },
);
