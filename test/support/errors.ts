/** Assertion helpers for domain errors. */
import { expect } from "vitest";
import { AppError } from "../../src/errors.ts";

/**
 * Awaits a call that must fail with an {@link AppError}.
 * @returns the error, for assertions on its code, status, message and details
 * @throws when the call succeeds or fails with anything else
 */
export async function appErrorOf(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error("expected the call to fail");
}

/**
 * Runs a call that must throw an {@link AppError} synchronously.
 * @returns the error, for assertions on its code, status, message and details
 * @throws when the call returns or throws anything else
 */
export function appErrorThrownBy(call: () => unknown): AppError {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error("expected the call to throw an AppError");
}
