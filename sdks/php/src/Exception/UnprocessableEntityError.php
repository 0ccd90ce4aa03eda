<?php

declare(strict_types=1);

namespace Merx\Exception;

/** 422 Unprocessable Entity: every field error at once, each `{field, code, message}`. */
class UnprocessableEntityError extends MerxError
{
    /** @return list<array{field: string, code: string, message: string}> */
    public function errors(): array
    {
        $errors = [];
        foreach (\is_array($this->problem['errors'] ?? null) ? $this->problem['errors'] : [] as $error) {
            if (\is_array($error)) {
                $errors[] = [
                    'field' => (string) ($error['field'] ?? ''),
                    'code' => (string) ($error['code'] ?? ''),
                    'message' => (string) ($error['message'] ?? ''),
                ];
            }
        }

        return $errors;
    }
}
