import type { ProtocolVersion } from '../model.js';
import type { Codec } from './codec.js';
import { v0_3Codec } from './v0_3.js';
import { v1Codec } from './v1.js';

export const codecFor = (version: ProtocolVersion): Codec => (version === '1.0' ? v1Codec : v0_3Codec);
