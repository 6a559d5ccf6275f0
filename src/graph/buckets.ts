/** The bucket layout functions, for the domain (defined next to the partitions they address). */
export {
  bucketCode,
  bucketCodeOf,
  bucketOf,
  readBucketCodes,
  SINGLE_BUCKET,
  writeBucketCodes,
} from '../store/buckets.js';
