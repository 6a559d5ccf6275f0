/** The search layout's placement (`model/search.ts`): partitions of names, writes during a split, the ranges a query reads. */
import { describe, expect, it } from 'vitest';
import {
  EMPTY_SEARCH_LAYOUT,
  type SearchLayout,
  searchPartitionOf,
  searchRanges,
  searchWritePartitions,
} from '../../src/model/search.js';

const E = '\uffff';

describe('search ranges', () => {
  const layout: SearchLayout = { starts: ['thm', 'thmz', 'tha.b', 'rez'], split: null };

  it('a name’s partition is the greatest start at or below it within its base', () => {
    const names = [
      't',
      'th',
      'tha',
      'tha.b',
      'tha.c',
      'thl',
      'thm',
      'thma',
      'thmz',
      'thz',
      're',
      'rez1',
      'a',
    ];
    expect(names.map((n) => searchPartitionOf(layout, n))).toEqual([
      't',
      'th',
      'th',
      'tha.b',
      'tha.b',
      'tha.b',
      'thm',
      'thm',
      'thmz',
      'thmz',
      're',
      'rez',
      'a',
    ]);
    expect(searchPartitionOf(EMPTY_SEARCH_LAYOUT, 'thmz')).toBe('th');
  });

  it('a query reads the ranges that meet its prefix, in name order, each bounded', () => {
    expect(searchRanges(layout, 'thm')).toEqual([
      { partition: 'thm', from: 'thm', to: 'thmz' },
      { partition: 'thmz', from: 'thmz', to: `th${E}` },
    ]);
    expect(searchRanges(layout, 'th')).toEqual([
      { partition: 'th', from: 'th', to: 'tha.b' },
      { partition: 'tha.b', from: 'tha.b', to: 'thm' },
      { partition: 'thm', from: 'thm', to: 'thmz' },
      { partition: 'thmz', from: 'thmz', to: `th${E}` },
    ]);
    expect(searchRanges(layout, 'thb')).toEqual([{ partition: 'tha.b', from: 'tha.b', to: 'thm' }]);
    // One character: the one-character name's base, then each two-character base's ranges.
    const t = searchRanges(layout, 't');
    expect(t.length).toBe(1 + 38 + 3);
    expect(t.slice(0, 2)).toEqual([
      { partition: 't', from: 't', to: 't\u0000' },
      { partition: 't.', from: 't.', to: `t.${E}` },
    ]);
    expect(t.map((r) => r.partition).filter((p) => p.startsWith('th'))).toEqual([
      'th',
      'tha.b',
      'thm',
      'thmz',
    ]);
  });

  it('during a split, writes of the moved range go to both sides until it is finalized', () => {
    const split = { parent: 'th5', starts: ['thm', 'ths'], copied: 0 };
    const names = ['th1', 'thb', 'thm', 'thq', 'thz', 're'];
    const dual: SearchLayout = { starts: ['th5'], split: { ...split, stage: 'dual' } };
    expect(names.map((n) => searchWritePartitions(dual, n))).toEqual([
      ['th'],
      ['th5'],
      ['th5', 'thm'],
      ['th5', 'thm'],
      ['th5', 'ths'],
      ['re'],
    ]);
    const flipped: SearchLayout = { starts: ['th5', 'thm', 'ths'], split: { ...split, stage: 'flipped' } };
    expect(names.map((n) => searchWritePartitions(flipped, n))).toEqual([
      ['th'],
      ['th5'],
      ['thm', 'th5'],
      ['thm', 'th5'],
      ['ths', 'th5'],
      ['re'],
    ]);
    const finalized: SearchLayout = { ...flipped, split: { ...split, stage: 'finalized' } };
    expect(names.map((n) => searchWritePartitions(finalized, n))).toEqual([
      ['th'],
      ['th5'],
      ['thm'],
      ['thm'],
      ['ths'],
      ['re'],
    ]);
  });
});
