import { z } from 'zod';

/**
 * An ISO 8601 time in an answer. The example is what the reference shows: without one, Swagger UI
 * invents a date from the pattern ("3840-02-29…").
 */
export const timestamp = z.iso.datetime().meta({ examples: ['2026-11-25T10:00:00.000Z'] });
